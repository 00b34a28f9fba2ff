# rayo_embed_shaders(target SOURCE_DIR dir): compiles every dir/<name>.comp with glslc at build
# time (a compile error fails the build; #include dependencies are tracked through glslc's
# depfile) and embeds the SPIR-V in target. The generated header <vulkan/embedded_shaders.hpp>
# declares `enum class rayo::vulkan::Shader` with one value per shader build and
# rayo::vulkan::shader_code(Shader), so a new shader is a new .comp file and nothing else here.
# Each shader's builds follow from its source:
# * a shader that includes float_controls.glsl (results that can be subnormal) is also compiled
#   with -DRAYO_DENORM_PRESERVE (the DenormPreserve execution mode for float32), for devices that
#   can keep subnormals;
# * a shader that tests RAYO_INTEGER_DOT is also compiled with -DRAYO_INTEGER_DOT, as the shader
#   <name>_integer_dot, for devices with VK_KHR_shader_integer_dot_product;
# * a shader that tests RAYO_ELEMENT16 is also compiled with -DRAYO_ELEMENT16, as the shader
#   <name>_element16: its tensors f16 or bf16 (specialization constant 7) through 16-bit storage,
#   for devices with storageBuffer16BitAccess (and with its own denormal-preserving build).
# Every shader may include op_codes.glsl, generated from rayo/op_table.hpp by rayo-glsl-op-codes.
# Everything generated lives in the build tree.

set(RAYO_SPIRV_TO_CPP ${CMAKE_CURRENT_LIST_DIR}/RayoSpirvToCpp.cmake)

# One glslc build of source_dir/<name>.comp, embedded as shaders::<symbol>; ARGN: extra glslc
# options (-D...). Appends to the caller's `declarations` and `sources`.
function(_rayo_embed_shader out_dir source_dir name symbol)
    set(comp ${source_dir}/${name}.comp)
    set(spv ${out_dir}/${symbol}.spv)
    set(cpp ${out_dir}/${symbol}.spv.cpp)
    set(depfile_option)
    set(depfile_args)
    if(CMAKE_GENERATOR MATCHES "Ninja|Makefiles")
        set(depfile_option DEPFILE ${spv}.d)
        set(depfile_args -MD -MF ${spv}.d)
    endif()
    add_custom_command(OUTPUT ${spv} ${cpp}
        COMMAND ${RAYO_GLSLC} --target-env=vulkan1.1 -O -Werror -I ${out_dir}/glsl ${ARGN} ${depfile_args}
            -o ${spv} ${comp}
        COMMAND ${CMAKE_COMMAND} -DSPIRV=${spv} -DOUTPUT=${cpp} -DNAME=${symbol} -DSOURCE=${name}.comp
                "-DOPTIONS=${ARGN}" -P ${RAYO_SPIRV_TO_CPP}
        MAIN_DEPENDENCY ${comp}
        DEPENDS ${RAYO_SPIRV_TO_CPP} ${out_dir}/glsl/op_codes.glsl
        ${depfile_option}
        COMMENT "glslc ${name}.comp ${ARGN}"
        VERBATIM)
    set(declarations "${declarations}extern std::span<std::uint32_t const> const ${symbol};\n" PARENT_SCOPE)
    set(sources ${sources} ${cpp} PARENT_SCOPE)
endfunction()

function(rayo_embed_shaders target)
    cmake_parse_arguments(PARSE_ARGV 1 arg "" "SOURCE_DIR" "")
    set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/rayo_shaders)

    add_executable(rayo-glsl-op-codes EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/src/vulkan/glsl_op_codes.cpp)
    target_include_directories(rayo-glsl-op-codes PRIVATE ${PROJECT_SOURCE_DIR}/include)
    target_compile_features(rayo-glsl-op-codes PRIVATE cxx_std_20)
    add_custom_command(OUTPUT ${out_dir}/glsl/op_codes.glsl
        COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}/glsl
        COMMAND rayo-glsl-op-codes ${out_dir}/glsl/op_codes.glsl
        DEPENDS rayo-glsl-op-codes
        COMMENT "op_codes.glsl from rayo/op_table.hpp"
        VERBATIM)

    file(GLOB comps CONFIGURE_DEPENDS ${arg_SOURCE_DIR}/*.comp)
    set(declarations)
    set(sources)
    set(enumerators)
    set(table)
    foreach(comp IN LISTS comps)
        get_filename_component(name ${comp} NAME_WE)
        file(STRINGS ${comp} denorm REGEX "^#include \"float_controls.glsl\"")
        file(STRINGS ${comp} integer_dot REGEX "^#if(def)? .*RAYO_INTEGER_DOT")
        file(STRINGS ${comp} element16 REGEX "^#if(def)? .*RAYO_ELEMENT16")
        set(builds ${name})
        if(integer_dot)
            list(APPEND builds ${name}_integer_dot)
        endif()
        if(element16)
            list(APPEND builds ${name}_element16)
        endif()
        foreach(build IN LISTS builds)
            set(defines)
            if(build STREQUAL "${name}_integer_dot")
                set(defines -DRAYO_INTEGER_DOT)
            elseif(build STREQUAL "${name}_element16")
                set(defines -DRAYO_ELEMENT16)
            endif()
            _rayo_embed_shader(${out_dir} ${arg_SOURCE_DIR} ${name} ${build} ${defines})
            set(preserve "{}")
            if(denorm AND NOT build STREQUAL "${name}_integer_dot")
                _rayo_embed_shader(${out_dir} ${arg_SOURCE_DIR} ${name} ${build}_denorm_preserve ${defines}
                    -DRAYO_DENORM_PRESERVE)
                set(preserve "shaders::${build}_denorm_preserve")
            endif()
            string(APPEND enumerators "    ${build},\n")
            string(APPEND table "        {\"${build}\", shaders::${build}, ${preserve}},\n")
        endforeach()
    endforeach()
    file(CONFIGURE OUTPUT ${out_dir}/vulkan/embedded_shaders.hpp CONTENT
"// Generated by cmake/RayoShaders.cmake: SPIR-V of shaders/*.comp, compiled at build time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rayo::vulkan {

namespace shaders {
${declarations}}  // namespace shaders

// Every shader build: one per shaders/<name>.comp, and <name>_integer_dot, <name>_element16 for those built so.
enum class Shader : std::uint8_t {
${enumerators}};

struct ShaderCode {
    std::string_view name;
    std::span<std::uint32_t const> code;
    std::span<std::uint32_t const> denorm_preserve_code;  // empty: built in the default mode only
};

inline ShaderCode const& shader_code(Shader shader) {
    static ShaderCode const table[] = {
${table}    };
    return table[static_cast<std::size_t>(shader)];
}

}  // namespace rayo::vulkan
")
    target_sources(${target} PRIVATE ${sources})
    target_include_directories(${target} PRIVATE ${out_dir})
endfunction()
