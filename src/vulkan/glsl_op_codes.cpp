// Writes op_codes.glsl, the shaders' names for the codes of rayo::op_table and of DType, at build
// time (cmake/RayoShaders.cmake), so that the shaders switch on the same numbers the host passes.
//   rayo-glsl-op-codes OUTPUT
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include "rayo/dtype.hpp"
#include "rayo/op_table.hpp"

namespace {

std::string upper(std::string_view name) {
    std::string s(name);
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT\n", argv[0]);
        return 2;
    }
    std::ofstream out(argv[1]);
    out << "// Generated from rayo/op_table.hpp and rayo/dtype.hpp by rayo-glsl-op-codes: the codes the\n"
           "// host passes for an op (specialization constant 0) and for an element type.\n"
           "#ifndef RAYO_OP_CODES_GLSL\n#define RAYO_OP_CODES_GLSL\n\n";
    for (rayo::OpInfo const& row : rayo::op_table)
        out << "const uint RAYO_OP_" << upper(row.name) << " = " << static_cast<unsigned>(row.op) << "u;\n";
    out << "\n// Ops per family: a shader that switches over a family's ops checks the count it handles.\n";
    for (std::size_t i = 0; i < rayo::op_family_count; ++i) {
        auto const f = static_cast<rayo::OpFamily>(i);
        out << "#define RAYO_" << upper(to_string(f)) << "_OP_COUNT " << rayo::op_count(f) << "\n";
    }
    out << "\n";
    // Every DType: the codes run from 0 up to the first that to_string does not name.
    for (unsigned i = 0; to_string(static_cast<rayo::DType>(i)) != "?"; ++i)
        out << "const uint RAYO_DTYPE_" << upper(to_string(static_cast<rayo::DType>(i))) << " = " << i << "u;\n";
    out << "\n#endif\n";
    return out ? 0 : 1;
}
