# Dependencies compiled into rayo. Each is found again by rayoConfig.cmake (find_dependency).
find_package(Threads REQUIRED)

# Debian's xsimd exports a link to the `xtl` target but does not look for it itself, so xtl is
# found first when that package needs it.
find_package(xtl QUIET)
find_package(xsimd 8 REQUIRED)
set(RAYO_XSIMD_NEEDS_XTL OFF)
get_target_property(_rayo_xsimd_links xsimd INTERFACE_LINK_LIBRARIES)
if(_rayo_xsimd_links MATCHES "xtl")
    if(NOT TARGET xtl)
        message(FATAL_ERROR
            "This xsimd package links to xtl, which was not found: install xtl-dev (scripts/setup does)")
    endif()
    set(RAYO_XSIMD_NEEDS_XTL ON)
endif()
unset(_rayo_xsimd_links)
