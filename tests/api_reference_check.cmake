# docs/api.md keeps up with the headers: its "rayo/ops.hpp" section names every function that
# include/rayo/ops.hpp declares, as `NAME(...` or `NAME<...`, and its "rayo/op_table.hpp" section
# lists the OpFamily and Op enumerators and the size of op_table as include/rayo/op_table.hpp has them.
#   cmake -DSOURCE_DIR=... -P api_reference_check.cmake
cmake_minimum_required(VERSION 3.22)
include(${CMAKE_CURRENT_LIST_DIR}/docs_public_ops.cmake)
rayo_read_public_ops("${SOURCE_DIR}")
file(READ "${SOURCE_DIR}/docs/api.md" reference)
set(problems)

# The functions, in the section of ops.hpp.
rayo_markdown_section(operations "${SOURCE_DIR}/docs/api.md" "## `rayo/ops.hpp` — operations")
rayo_require_names(problems "${operations}" "`" "[(<]"
    "docs/api.md (section \"rayo/ops.hpp\") does not list these functions of include/rayo/ops.hpp"
    ${rayo_ops_functions})

# `a, b, c` in the reference against the header's list: what it lacks, what it has too many of,
# or the order.
function(compare_list what documented actual)
    set(lacks ${actual})
    list(REMOVE_ITEM lacks ${documented})
    set(extra ${documented})
    list(REMOVE_ITEM extra ${actual})
    if(lacks)
        list(JOIN lacks ", " lacks)
        list(APPEND problems "docs/api.md's ${what} lacks ${lacks}, which include/rayo/op_table.hpp has")
    endif()
    if(extra)
        list(JOIN extra ", " extra)
        list(APPEND problems "docs/api.md's ${what} names ${extra}, which include/rayo/op_table.hpp does not have")
    endif()
    if(NOT lacks AND NOT extra AND NOT documented STREQUAL actual)
        list(JOIN actual ", " actual)
        list(APPEND problems "docs/api.md's ${what} is not in the header's order: ${actual}")
    endif()
    set(problems ${problems} PARENT_SCOPE)
endfunction()

string(REGEX MATCH "`OpFamily` — `enum class { ([^}`]*) }`" _ "${reference}")
string(REPLACE ", " ";" documented "${CMAKE_MATCH_1}")
if(NOT documented)
    list(APPEND problems "docs/api.md has no line \"`OpFamily` — `enum class { ... }`\" listing the op families")
else()
    compare_list("`OpFamily` list" "${documented}" "${rayo_op_families}")
endif()

string(REGEX MATCH "`Op` — `enum class`, in table order: `([^`]*)`" _ "${reference}")
string(REGEX REPLACE ",[ \n]+" ";" documented "${CMAKE_MATCH_1}")
if(NOT documented)
    list(APPEND problems "docs/api.md has no line \"`Op` — `enum class`, in table order: `...`\" listing the ops")
else()
    compare_list("`Op` list" "${documented}" "${rayo_op_enumerators}")
endif()

list(LENGTH rayo_op_names row_count)
string(REGEX MATCH "std::array<OpInfo, ([0-9]+)>" _ "${reference}")
if(NOT CMAKE_MATCH_1 STREQUAL row_count)
    list(APPEND problems
        "docs/api.md gives op_table as std::array<OpInfo, ${CMAKE_MATCH_1}>, but it has ${row_count} rows")
endif()

if(problems)
    list(JOIN problems "\n" problems)
    message(FATAL_ERROR "${problems}")
endif()
list(LENGTH rayo_ops_functions count)
list(LENGTH rayo_op_families family_count)
message(STATUS "docs/api.md lists all ${count} functions of include/rayo/ops.hpp, "
               "the ${family_count} op families and the ${row_count} ops of op_table")
