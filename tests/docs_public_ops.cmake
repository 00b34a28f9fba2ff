# The public ops, read from the headers, for the docs checks (api_reference_check.cmake,
# docs_op_lists_check.cmake). include() it, then call rayo_read_public_ops(<source dir>), which sets:
#   rayo_op_families   the OpFamily enumerators, in order (include/rayo/op_table.hpp)
#   rayo_op_enumerators the Op enumerators, in order
#   rayo_op_names      the names of op_table's rows (what users see: errors, logs, stats())
#   rayo_ops_functions every function include/rayo/ops.hpp declares, out-parameter forms included
#   rayo_public_ops    rayo_op_names and rayo_ops_functions, each f_into folded into f
# A pattern that no longer matches its header is a FATAL_ERROR, so the checks never pass on nothing.

function(rayo_read_public_ops source_dir)
    file(READ "${source_dir}/include/rayo/op_table.hpp" table)

    string(REGEX MATCH "enum class OpFamily[^{]*{([^}]*)}" _ "${table}")
    string(REGEX REPLACE "[ \n]" "" body "${CMAKE_MATCH_1}")
    string(REPLACE "," ";" families "${body}")
    list(REMOVE_ITEM families "")

    string(REGEX MATCH "enum class Op [^{]*{([^}]*)}" _ "${table}")
    string(REGEX REPLACE "//[^\n]*" "" body "${CMAKE_MATCH_1}")
    string(REGEX REPLACE "[ \n]" "" body "${body}")
    string(REPLACE "," ";" enumerators "${body}")
    list(REMOVE_ITEM enumerators "")

    # Rows: OpInfo{Op::<enumerator>, "<name>", OpFamily::<family>, ...
    string(REGEX MATCHALL "OpInfo{Op::[a-z_0-9]+, \"[a-z_0-9]+\", OpFamily::[a-z_]+" rows "${table}")
    set(names)
    foreach(row IN LISTS rows)
        string(REGEX MATCH "OpInfo{Op::([a-z_0-9]+), \"([a-z_0-9]+)\", OpFamily::([a-z_]+)" _ "${row}")
        list(APPEND names ${CMAKE_MATCH_2})
        if(NOT CMAKE_MATCH_3 IN_LIST families)
            message(FATAL_ERROR "op_table.hpp: row ${CMAKE_MATCH_2} names family ${CMAKE_MATCH_3}, "
                                "which the OpFamily pattern did not find (${families})")
        endif()
    endforeach()
    list(LENGTH families family_count)
    list(LENGTH enumerators enumerator_count)
    list(LENGTH names row_count)
    if(family_count LESS 2 OR enumerator_count LESS 30 OR NOT row_count EQUAL enumerator_count)
        message(FATAL_ERROR "include/rayo/op_table.hpp: read ${family_count} families, ${enumerator_count} "
                            "Op enumerators and ${row_count} op_table rows: the patterns of "
                            "tests/docs_public_ops.cmake no longer match the header")
    endif()

    # Declarations and inline definitions at namespace scope:
    # "[template <...> ][inline ][RAYO_API ]<type> NAME(", the template head on its line or the one before.
    file(READ "${source_dir}/include/rayo/ops.hpp" header)
    string(REGEX MATCHALL "\n(template <[^>\n]*> )?(inline |RAYO_API )*[A-Za-z_0-9:<>]+ ([a-z_0-9]+)\\("
           declarations "${header}")
    set(functions)
    foreach(d IN LISTS declarations)
        string(REGEX REPLACE ".* ([a-z_0-9]+)\\($" "\\1" name "${d}")
        list(APPEND functions ${name})
    endforeach()
    list(REMOVE_DUPLICATES functions)
    list(LENGTH functions function_count)
    if(function_count LESS 30)
        message(FATAL_ERROR "found only ${function_count} functions in include/rayo/ops.hpp (${functions}): "
                            "the pattern of tests/docs_public_ops.cmake no longer matches its declarations")
    endif()

    set(public ${names})
    foreach(f IN LISTS functions)
        string(REGEX REPLACE "_into$" "" base "${f}")
        list(APPEND public ${base})
    endforeach()
    list(REMOVE_DUPLICATES public)

    set(rayo_op_families ${families} PARENT_SCOPE)
    set(rayo_op_enumerators ${enumerators} PARENT_SCOPE)
    set(rayo_op_names ${names} PARENT_SCOPE)
    set(rayo_ops_functions ${functions} PARENT_SCOPE)
    set(rayo_public_ops ${public} PARENT_SCOPE)
endfunction()

# The text of the section of a Markdown file that starts at the heading line `heading`
# ("## Semantics") and ends before the next heading of the same level; semicolons
# become commas (CMake lists split on them). FATAL_ERROR when the heading is missing.
function(rayo_markdown_section out file heading)
    file(READ "${file}" text)
    string(REPLACE ";" "," text "\n${text}")
    string(FIND "${text}" "\n${heading}\n" start)
    if(start EQUAL -1)
        message(FATAL_ERROR "${file} has no heading \"${heading}\", which the docs checks read")
    endif()
    string(LENGTH "\n${heading}\n" heading_length)
    math(EXPR start "${start} + ${heading_length}")
    string(SUBSTRING "${text}" ${start} -1 rest)
    string(REGEX MATCH "^#+" level "${heading}")
    string(FIND "${rest}" "\n${level} " end)
    if(NOT end EQUAL -1)
        string(SUBSTRING "${rest}" 0 ${end} rest)
    endif()
    set(${out} "${rest}" PARENT_SCOPE)
endfunction()

# Appends "<message>: a, b, ..." to the caller's list `problems_var` for each name (the arguments
# after `message`) that `text` does not match as the regular expression <before><name><after>.
function(rayo_require_names problems_var text before after message)
    set(missing)
    foreach(name IN LISTS ARGN)
        if(NOT text MATCHES "${before}${name}${after}")
            list(APPEND missing ${name})
        endif()
    endforeach()
    if(missing)
        list(JOIN missing ", " missing)
        set(${problems_var} ${${problems_var}} "${message}: ${missing}" PARENT_SCOPE)
    endif()
endfunction()
