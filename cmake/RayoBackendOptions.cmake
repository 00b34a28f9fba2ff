# RAYO_ENABLE_VULKAN / RAYO_ENABLE_CUDA: ON, OFF or AUTO. The GPU backends load their drivers at
# run time, so AUTO never probes the machine; it only depends on what the build can find.
foreach(backend VULKAN CUDA)
    string(TOUPPER "${RAYO_ENABLE_${backend}}" value)
    if(NOT value MATCHES "^(ON|OFF|AUTO|TRUE|FALSE|YES|NO|1|0)$")
        message(FATAL_ERROR "RAYO_ENABLE_${backend}='${RAYO_ENABLE_${backend}}': expected ON, OFF or AUTO")
    endif()
endforeach()

include(RayoVulkan)

string(TOUPPER "${RAYO_ENABLE_CUDA}" value)
if(value MATCHES "^(ON|TRUE|YES|1)$")
    message(FATAL_ERROR "RAYO_ENABLE_CUDA=ON: this version of rayo does not contain the CUDA backend yet; use AUTO or OFF")
endif()
set(RAYO_HAVE_CUDA OFF)
message(STATUS "rayo: CUDA backend: not in this version (RAYO_ENABLE_CUDA=${value})")
