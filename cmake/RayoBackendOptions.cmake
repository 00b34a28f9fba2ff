# RAYO_ENABLE_VULKAN / RAYO_ENABLE_CUDA: ON, OFF or AUTO. The GPU backends load their drivers at
# run time, so AUTO never probes the machine; it only depends on what the build can find.
foreach(backend VULKAN CUDA)
    string(TOUPPER "${RAYO_ENABLE_${backend}}" value)
    if(NOT value MATCHES "^(ON|OFF|AUTO|TRUE|FALSE|YES|NO|1|0)$")
        message(FATAL_ERROR "RAYO_ENABLE_${backend}='${RAYO_ENABLE_${backend}}': expected ON, OFF or AUTO")
    endif()
endforeach()

include(RayoVulkan)
include(RayoCuda)
