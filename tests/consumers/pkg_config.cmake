# A build without CMake: compile and run tests/consumers/consumer.cpp with the flags pkg-config
# gives for the installed rayo.pc, and (LLM_SOURCE given) tests/consumers/llm/consumer.cpp with
# those of rayo-llm.pc.
#   cmake -DPREFIX=... -DCXX=... -DSOURCE=... [-DLLM_SOURCE=...] -DBINARY=... -P pkg_config.cmake
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB_RECURSE pc_files "${PREFIX}/*/rayo.pc")
list(LENGTH pc_files count)
if(NOT count EQUAL 1)
    message(FATAL_ERROR "expected one rayo.pc under ${PREFIX}, found: ${pc_files}")
endif()
get_filename_component(pc_dir "${pc_files}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
file(MAKE_DIRECTORY "${BINARY}")

function(build_and_run package source)
    execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${package} OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "pkg-config --cflags --libs ${package} failed")
    endif()
    separate_arguments(flags UNIX_COMMAND "${flags}")
    execute_process(COMMAND ${CXX} -std=c++20 "${source}" -o "${BINARY}/${package}-consumer" ${flags}
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "compiling with `pkg-config --cflags --libs ${package}` (${flags}) failed")
    endif()
    execute_process(COMMAND "${BINARY}/${package}-consumer" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "the pkg-config consumer of ${package} failed")
    endif()
    message(STATUS "pkg-config consumer of ${package}: ${flags}")
endfunction()

build_and_run(rayo "${SOURCE}")
if(LLM_SOURCE)
    build_and_run(rayo-llm "${LLM_SOURCE}")
endif()
