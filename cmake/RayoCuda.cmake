# The CUDA backend's build inputs: none beyond the system's dl library. It declares the slice of
# the driver ABI it uses itself and opens libcuda.so.1 at run time, so building it needs neither
# the CUDA toolkit nor a driver, and nothing here probes for either.
#
# Sets RAYO_HAVE_CUDA from RAYO_ENABLE_CUDA (ON or AUTO: built, OFF: not).
# rayo_add_cuda_backend(target) adds the backend's sources to target.

string(TOUPPER "${RAYO_ENABLE_CUDA}" _rayo_cuda_mode)
if(_rayo_cuda_mode MATCHES "^(OFF|FALSE|NO|0)$")
    set(RAYO_HAVE_CUDA OFF)
    message(STATUS "rayo: CUDA backend: off (RAYO_ENABLE_CUDA=OFF)")
else()
    set(RAYO_HAVE_CUDA ON)
    message(STATUS "rayo: CUDA backend: on (libcuda.so.1 is opened at run time)")
endif()

function(rayo_add_cuda_backend target)
    # One glue file per op family, each launching its generated kernels.
    file(GLOB _rayo_cuda_op_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cuda/ops/*.cpp)
    target_sources(${target} PRIVATE ${_rayo_cuda_op_sources}
        ${PROJECT_SOURCE_DIR}/src/cuda/captured_graph.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/context.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/cuda_backend.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/cuda_backend_ops.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/discovery.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/driver_api.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/kernel_profile.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/memory_pool.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/module_cache.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/native_handles.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/pinned_staging.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/stream.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/tensor_map.cpp
        ${PROJECT_SOURCE_DIR}/src/cuda/user_kernel.cpp)
    # dlopen/dlsym of the driver. Private: a static rayo's export set carries it as
    # $<LINK_ONLY:dl>, a system library that needs no find_dependency.
    target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
endfunction()
