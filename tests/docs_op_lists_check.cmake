# Every public op is in the user docs: each name of include/rayo/op_table.hpp's op_table and each
# function of include/rayo/ops.hpp (f_into counted as f) must appear
#   * in docs/ops.md's "Semantics" table, as code: `name(...)`, `name<...>`, `name` (or `name_into(`),
#   * in README.md's op table (section "Operations", its "ops" column), as a word (or name_into),
# and docs/architecture.md lists the op families of `OpFamily` in its order.
#   cmake -DSOURCE_DIR=... -P docs_op_lists_check.cmake
cmake_minimum_required(VERSION 3.22)
include(${CMAKE_CURRENT_LIST_DIR}/docs_public_ops.cmake)
rayo_read_public_ops("${SOURCE_DIR}")
set(problems)

# docs/ops.md: the Semantics table.
rayo_markdown_section(semantics "${SOURCE_DIR}/docs/ops.md" "## Semantics")
rayo_require_names(problems "${semantics}" "`" "(_into)?[^A-Za-z0-9_]"
    "docs/ops.md (the \"Semantics\" table) does not define these public ops" ${rayo_public_ops})

# README.md: the "ops" column (the second) of the table under "## Operations" whose header is
# "| family | ops |".
rayo_markdown_section(operations "${SOURCE_DIR}/README.md" "## Operations")
string(REPLACE "\\|" "/" operations "${operations}")  # escaped bars inside cells
string(REGEX MATCH "\n\\| family \\| ops \\|[^\n]*(\n\\|[^\n]*)*" table "${operations}")
string(REGEX MATCHALL "\n\\|[^|\n]*\\|[^|\n]*" rows "${table}")
set(ops_column "")
foreach(row IN LISTS rows)
    string(REGEX REPLACE "^\n\\|[^|]*\\|" "" cell "${row}")
    if(NOT cell MATCHES "^ (ops|-+) $")
        string(APPEND ops_column "|${cell}")
    endif()
endforeach()
list(LENGTH rows row_count)
if(row_count LESS 5)
    list(APPEND problems "README.md has no op table (\"| family | ops | ...\") under \"## Operations\"")
else()
    rayo_require_names(problems "${ops_column}" "(^|[^A-Za-z0-9_])" "(_into)?([^A-Za-z0-9_]|$)"
        "README.md (the op table under \"Operations\") does not name these public ops" ${rayo_public_ops})
endif()

# docs/architecture.md: "its `OpFamily` (unary, binary, ...)".
file(READ "${SOURCE_DIR}/docs/architecture.md" architecture)
string(REGEX REPLACE "[ \n]+" " " architecture "${architecture}")
list(JOIN rayo_op_families ", " families)
if(NOT architecture MATCHES "`OpFamily` \\(([^)]*)\\)")
    list(APPEND problems "docs/architecture.md does not list the op families as \"`OpFamily` (${families})\"")
elseif(NOT CMAKE_MATCH_1 STREQUAL families)
    string(CONCAT problem "docs/architecture.md lists the op families as (${CMAKE_MATCH_1}), "
                          "include/rayo/op_table.hpp has (${families})")
    list(APPEND problems "${problem}")
endif()

if(problems)
    list(JOIN problems "\n" problems)
    message(FATAL_ERROR "${problems}")
endif()
list(LENGTH rayo_public_ops count)
message(STATUS "docs/ops.md and README.md name all ${count} public ops; docs/architecture.md lists the op families")
