# What an install holds besides the library and headers: the tools (which run), the license, the
# CMake and pkg-config package files, rayo/config.hpp; and package files free of leftovers of
# their generation (a literal if(ON)) and of repeated link items.
#   cmake -DPREFIX=... -P installed_files.cmake
foreach(file bin/rayo-info bin/rayo-gguf-inspect bin/rayo-llama share/doc/rayo/LICENSE include/rayo/config.hpp
             include/rayo/llm.hpp)
    if(NOT EXISTS "${PREFIX}/${file}")
        message(FATAL_ERROR "the install lacks ${file}")
    endif()
endforeach()
foreach(pattern "*/pkgconfig/rayo.pc" "*/cmake/rayo/rayoConfig.cmake" "*/cmake/rayo/rayoConfigVersion.cmake"
                "*/cmake/rayo/rayoTargets.cmake" "*/cmake/rayo/rayoCpuKernelsTargets.cmake"
                "*/cmake/rayo/rayoLlmTargets.cmake"
                "*/pkgconfig/rayo-llm.pc")
    file(GLOB_RECURSE found "${PREFIX}/${pattern}")
    if(NOT found)
        message(FATAL_ERROR "the install lacks ${pattern}")
    endif()
endforeach()

execute_process(COMMAND ${CMAKE_COMMAND} -E env RAYO_DEVICE=cpu "${PREFIX}/bin/rayo-info"
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "best device: cpu")
    message(FATAL_ERROR "the installed rayo-info failed (${rc}):\n${out}")
endif()

file(GLOB_RECURSE config_files "${PREFIX}/*/cmake/rayo/*.cmake")
foreach(file IN LISTS config_files)
    file(READ "${file}" text)
    if(text MATCHES "if\\((ON|OFF|TRUE|FALSE|0|1)\\)")
        message(FATAL_ERROR "${file} has a literal if(${CMAKE_MATCH_1})")
    endif()
    string(REGEX MATCHALL "INTERFACE_LINK_LIBRARIES \"[^\"]*\"" links "${text}")
    foreach(list IN LISTS links)
        string(REGEX MATCHALL "LINK_ONLY:dl>" dl "${list}")
        list(LENGTH dl count)
        if(count GREATER 1)
            message(FATAL_ERROR "${file} names dl ${count} times: ${list}")
        endif()
    endforeach()
endforeach()
message(STATUS "install at ${PREFIX}: tools, license and package files present")
