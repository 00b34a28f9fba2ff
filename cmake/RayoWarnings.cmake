# rayo's own targets build warning-free with GCC and Clang at -Wall -Wextra -Wpedantic; CI adds
# RAYO_WERROR=ON so that a new warning fails it. Consumers never get these flags: they are PRIVATE
# to rayo's targets, and RAYO_WERROR is off unless asked for.
option(RAYO_WERROR "Treat warnings in rayo's own targets as errors" OFF)

function(rayo_target_warnings target)
    target_compile_options(${target} PRIVATE
        $<$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>:-Wall;-Wextra;-Wpedantic>
        $<$<AND:$<BOOL:${RAYO_WERROR}>,$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>>:-Werror>)
endfunction()
