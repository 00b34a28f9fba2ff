# Fails when the shared library exports a symbol of rayo's insides: the backends' namespaces, the
# internal rayo::detail (but for Storage, TensorAccess and the functions behind the templates of
# rayo/native.hpp and rayo/dlpack.hpp, which public headers use), or a non-rayo global (volk's
# Vulkan entry points, the driver table). Instantiations of standard library templates are
# exported by their own headers' visibility and are not counted.
#   cmake -DLIBRARY=librayo.so -P exported_symbols.cmake
find_program(NM nm REQUIRED)
execute_process(COMMAND ${NM} -D -C --defined-only "${LIBRARY}" OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm -D ${LIBRARY} failed")
endif()
string(REPLACE "\n" ";" symbols "${symbols}")
set(exported 0)
set(internal)
foreach(line IN LISTS symbols)
    if(NOT line MATCHES "^[0-9a-f]+ [A-Za-z] (.*)$")
        continue()
    endif()
    set(name "${CMAKE_MATCH_1}")
    math(EXPR exported "${exported} + 1")
    if(name MATCHES "rayo::(cuda|vulkan|cpu)::" OR
       (name MATCHES "rayo::detail::" AND
        NOT name MATCHES "rayo::detail::(Storage|TensorAccess|native_memory|adopt_native_memory|to_dlpack|from_dlpack)")
       OR
       (NOT name MATCHES "rayo" AND
        NOT name MATCHES "(^|[ (<,])(std|__gnu_cxx|__cxxabiv1)::|^(_init|_fini|_edata|_end|__bss_start)$"))
        list(APPEND internal "${name}")
    endif()
endforeach()
list(LENGTH internal count)
if(count GREATER 0)
    list(JOIN internal "\n  " text)
    message(FATAL_ERROR "${LIBRARY} exports ${count} internal symbols of ${exported}:\n  ${text}")
endif()
message(STATUS "${LIBRARY}: ${exported} exported symbols, none internal")
