# The Vulkan backend's build inputs: volk (its volk.c is compiled into rayo, so nothing links to
# libvulkan; the loader is opened at run time), the Vulkan headers, and glslc for the shaders.
# Nothing here probes drivers: whether a machine has a Vulkan device is decided at run time.
#
# Sets RAYO_HAVE_VULKAN from RAYO_ENABLE_VULKAN (ON: required, AUTO: when all are found, OFF).
# rayo_add_vulkan_backend(target) adds the backend's sources and embedded shaders to target.

string(TOUPPER "${RAYO_ENABLE_VULKAN}" _rayo_vulkan_mode)
set(RAYO_HAVE_VULKAN OFF)
if(NOT _rayo_vulkan_mode MATCHES "^(OFF|FALSE|NO|0)$")
    find_path(RAYO_VOLK_INCLUDE_DIR volk.h DOC "Directory of volk.h and volk.c (Debian: libvulkan-volk-dev)")
    find_file(RAYO_VOLK_SOURCE volk.c HINTS ${RAYO_VOLK_INCLUDE_DIR} DOC "volk.c, compiled into rayo")
    find_path(RAYO_VULKAN_INCLUDE_DIR vulkan/vulkan.h DOC "Directory of the Vulkan headers (Debian: libvulkan-dev)")
    find_program(RAYO_GLSLC glslc DOC "glslc, the GLSL to SPIR-V compiler (Debian: glslc)")
    set(_rayo_vulkan_missing)
    if(NOT RAYO_VOLK_INCLUDE_DIR OR NOT RAYO_VOLK_SOURCE)
        list(APPEND _rayo_vulkan_missing "volk.h/volk.c (libvulkan-volk-dev)")
    endif()
    if(NOT RAYO_VULKAN_INCLUDE_DIR)
        list(APPEND _rayo_vulkan_missing "vulkan/vulkan.h (libvulkan-dev)")
    endif()
    if(NOT RAYO_GLSLC)
        list(APPEND _rayo_vulkan_missing "glslc (glslc)")
    endif()
    if(_rayo_vulkan_missing)
        list(JOIN _rayo_vulkan_missing ", " _rayo_vulkan_missing_text)
        if(_rayo_vulkan_mode MATCHES "^(ON|TRUE|YES|1)$")
            message(FATAL_ERROR "RAYO_ENABLE_VULKAN=ON but the Vulkan backend's build inputs are missing: "
                                "${_rayo_vulkan_missing_text}. Install them (scripts/setup does) or use AUTO/OFF.")
        endif()
        message(STATUS "rayo: VULKAN backend: off (RAYO_ENABLE_VULKAN=AUTO; missing ${_rayo_vulkan_missing_text})")
    else()
        set(RAYO_HAVE_VULKAN ON)
        enable_language(C)  # volk.c
        message(STATUS "rayo: VULKAN backend: on (volk ${RAYO_VOLK_SOURCE}, glslc ${RAYO_GLSLC})")
    endif()
else()
    message(STATUS "rayo: VULKAN backend: off (RAYO_ENABLE_VULKAN=OFF)")
endif()

include(RayoShaders)

function(rayo_add_vulkan_backend target)
    set(_rayo_vulkan_sources
        ${PROJECT_SOURCE_DIR}/src/vulkan/captured_graph.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/command_stream.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/diagnostics.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/discovery.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/gpu_profile.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/instance.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/logical_device.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/memory_allocator.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/native_handles.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/physical_device.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/pipeline_cache.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/shader_runner.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/spirv_cooperative_matrix.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/user_shader.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/vulkan_backend.cpp
        ${PROJECT_SOURCE_DIR}/src/vulkan/vulkan_error.cpp)
    file(GLOB _rayo_vulkan_op_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/vulkan/ops/*.cpp)
    list(APPEND _rayo_vulkan_sources ${_rayo_vulkan_op_sources})
    target_sources(${target} PRIVATE ${_rayo_vulkan_sources} ${RAYO_VOLK_SOURCE})
    # volk defines the Vulkan entry points as global function pointers: keep them out of the
    # shared library's exported symbols.
    # It also casts dlsym's object pointer to function pointers, which ISO C does not define (POSIX
    # does): no warnings for code rayo does not own.
    set_source_files_properties(${RAYO_VOLK_SOURCE} PROPERTIES LANGUAGE C COMPILE_OPTIONS "-fvisibility=hidden;-w")
    # Vulkan structs are initialised as {VK_STRUCTURE_TYPE_...}, the rest zeroed: the idiom, not a bug.
    set_property(SOURCE ${_rayo_vulkan_sources} APPEND PROPERTY COMPILE_OPTIONS
        $<$<CXX_COMPILER_ID:GNU,Clang>:-Wno-missing-field-initializers>)
    # Only rayo's own sources see the Vulkan headers; the public headers never include them.
    target_include_directories(${target} PRIVATE ${RAYO_VOLK_INCLUDE_DIR} ${RAYO_VULKAN_INCLUDE_DIR})
    # volk.c opens the loader with dlopen.
    target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
    rayo_embed_shaders(${target} SOURCE_DIR ${PROJECT_SOURCE_DIR}/shaders)
endfunction()
