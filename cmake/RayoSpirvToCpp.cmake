# cmake -DSPIRV=file.spv -DOUTPUT=file.cpp -DNAME=id [-DSOURCE=name.comp -DOPTIONS=glslc-options]
#       -P RayoSpirvToCpp.cmake
# Writes the SPIR-V words (little-endian, as glslc writes them) as a constexpr uint32_t array.
file(READ ${SPIRV} hex HEX)
string(LENGTH "${hex}" length)
math(EXPR remainder "${length} % 8")
if(length EQUAL 0 OR NOT remainder EQUAL 0)
    message(FATAL_ERROR "${SPIRV}: not a SPIR-V module (${length} hex digits)")
endif()
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "(([^,]*,){8})" "\\1\n    " words "${words}")
if(NOT SOURCE)
    set(SOURCE ${NAME}.comp)
endif()
set(built_from "${SOURCE}")
if(OPTIONS)
    string(REPLACE ";" " " OPTIONS "${OPTIONS}")
    set(built_from "${SOURCE} (glslc ${OPTIONS})")
endif()
file(WRITE ${OUTPUT}
"// Generated from ${built_from} by cmake/RayoSpirvToCpp.cmake.
#include \"vulkan/embedded_shaders.hpp\"

namespace rayo::vulkan::shaders {
namespace {
constexpr std::uint32_t ${NAME}_words[] = {
    ${words}
};
}  // namespace
std::span<std::uint32_t const> const ${NAME}{${NAME}_words};
}  // namespace rayo::vulkan::shaders
")
