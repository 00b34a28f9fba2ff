#include "vulkan/spirv_cooperative_matrix.hpp"

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "rayo/error.hpp"

namespace rayo::vulkan::spirv {

namespace {

// SPIR-V opcodes, capabilities and the header's magic number (SPIR-V 1.6 unified specification).
enum Op : std::uint32_t {
    op_extension = 10,
    op_capability = 17,
    op_type_int = 21,
    op_type_float = 22,
    op_constant_true = 41,
    op_constant_false = 42,
    op_constant = 43,
    op_type_nv = 5358,
    op_load_nv = 5359,
    op_store_nv = 5360,
    op_mul_add_nv = 5361,
    op_length_nv = 5362,
    op_type_khr = 4456,
    op_load_khr = 4457,
    op_store_khr = 4458,
    op_mul_add_khr = 4459,
    op_length_khr = 4460,
};
constexpr std::uint32_t capability_nv = 5357, capability_khr = 6022;
constexpr std::uint32_t magic = 0x07230203;
constexpr std::size_t header_words = 5;

[[noreturn]] void fail(std::string const& what) {
    throw Error("vulkan: rewriting the cooperative-matrix shader for VK_KHR_cooperative_matrix: " + what);
}

using Instruction = std::vector<std::uint32_t>;  // [opcode, operands...]

std::vector<Instruction> split(std::span<std::uint32_t const> spirv) {
    if (spirv.size() < header_words || spirv[0] != magic) fail("not a SPIR-V module");
    std::vector<Instruction> out;
    for (std::size_t at = header_words; at < spirv.size();) {
        std::uint32_t const words = spirv[at] >> 16;
        if (words == 0 || at + words > spirv.size())
            fail("instruction at word " + std::to_string(at) + " runs past the module's end");
        Instruction ins{spirv[at] & 0xffffu};
        ins.insert(ins.end(), spirv.begin() + static_cast<std::ptrdiff_t>(at + 1),
                   spirv.begin() + static_cast<std::ptrdiff_t>(at + words));
        out.push_back(std::move(ins));
        at += words;
    }
    return out;
}

Instruction string_instruction(std::uint32_t opcode, std::string const& text) {
    std::vector<std::uint32_t> words((text.size() + 4) / 4, 0);  // nul-terminated, padded
    std::memcpy(words.data(), text.data(), text.size());
    Instruction ins{opcode};
    ins.insert(ins.end(), words.begin(), words.end());
    return ins;
}

std::string string_operand(Instruction const& ins) {
    std::string text(reinterpret_cast<char const*>(ins.data() + 1), (ins.size() - 1) * 4);
    return text.substr(0, text.find('\0'));
}

}  // namespace

std::vector<std::uint32_t> cooperative_matrix_nv_to_khr(std::span<std::uint32_t const> spirv,
                                                        std::span<MatrixType const> types) {
    std::vector<Instruction> const module = split(spirv);
    std::uint32_t bound = spirv[3];
    std::map<std::uint32_t, std::uint32_t> float_width, uint_value;
    std::set<std::uint32_t> true_ids, false_ids;
    std::uint32_t uint_type = 0;
    for (Instruction const& ins : module) {
        auto const operand = [&](std::size_t i) {
            if (i >= ins.size()) fail("opcode " + std::to_string(ins[0]) + " has too few operands");
            return ins[i];
        };
        switch (ins[0]) {
            case op_type_int:
                if (operand(2) == 32 && operand(3) == 0) uint_type = operand(1);
                break;
            case op_type_float: float_width[operand(1)] = operand(2); break;
            case op_constant:
                if (operand(1) == uint_type && uint_type != 0) uint_value[operand(2)] = operand(3);
                break;
            case op_constant_true: true_ids.insert(operand(2)); break;
            case op_constant_false: false_ids.insert(operand(2)); break;
            default: break;
        }
    }
    // The uint constants 0, 1, 2 the KHR operands name (MatrixUse, and the layouts RowMajorKHR = 0,
    // ColumnMajorKHR = 1), declared just before the first matrix type.
    std::uint32_t const constant_ids[3] = {bound, bound + 1, bound + 2};
    bound += 3;
    auto const layout = [&](std::uint32_t flag) {
        if (true_ids.count(flag)) return constant_ids[1];
        if (false_ids.count(flag)) return constant_ids[0];
        fail("a load or store's column-major flag (id " + std::to_string(flag) + ") is not a constant");
    };
    auto const use_of = [&](Instruction const& type) {
        if (type.size() != 6) fail("a matrix type with " + std::to_string(type.size() - 1) + " operands");
        auto const value = [&](std::uint32_t id, char const* what) {
            auto it = uint_value.find(id);
            if (it == uint_value.end()) fail(std::string("a matrix type's ") + what + " is not a uint constant");
            return it->second;
        };
        auto const width = float_width.find(type[2]);
        if (width == float_width.end()) fail("a matrix type whose component is not a float");
        std::uint32_t const rows = value(type[4], "row count"), columns = value(type[5], "column count");
        for (MatrixType const& t : types)
            if (t.component_bits == width->second && t.rows == rows && t.columns == columns) return t.use;
        fail("no use given for a " + std::to_string(rows) + "x" + std::to_string(columns) + " matrix of f" +
             std::to_string(width->second));
    };

    std::vector<std::uint32_t> out(spirv.begin(), spirv.begin() + header_words);
    auto const emit = [&](Instruction const& ins) {
        out.push_back(static_cast<std::uint32_t>(ins.size()) << 16 | ins[0]);
        out.insert(out.end(), ins.begin() + 1, ins.end());
    };
    bool declared = false, rewrote = false;
    for (Instruction const& ins : module) {
        switch (ins[0]) {
            case op_capability:
                emit(ins.size() == 2 && ins[1] == capability_nv ? Instruction{op_capability, capability_khr} : ins);
                break;
            case op_extension:
                emit(string_operand(ins) == "SPV_NV_cooperative_matrix"
                         ? string_instruction(op_extension, "SPV_KHR_cooperative_matrix")
                         : ins);
                break;
            case op_type_nv: {
                if (!declared) {
                    if (uint_type == 0) fail("the module declares no 32-bit uint type");
                    for (std::uint32_t v = 0; v < 3; ++v) emit({op_constant, uint_type, constant_ids[v], v});
                    declared = true;
                }
                // [id, component, scope, rows, columns] + use
                emit({op_type_khr, ins[1], ins[2], ins[3], ins[4], ins[5],
                      constant_ids[static_cast<std::uint32_t>(use_of(ins))]});
                rewrote = true;
                break;
            }
            case op_load_nv: {
                // [type, id, pointer, stride, column-major, memory access...] ->
                // [type, id, pointer, layout, stride, memory operands...]
                if (ins.size() < 6) fail("a matrix load with too few operands");
                Instruction khr{op_load_khr, ins[1], ins[2], ins[3], layout(ins[5]), ins[4]};
                khr.insert(khr.end(), ins.begin() + 6, ins.end());
                emit(khr);
                break;
            }
            case op_store_nv: {
                // [pointer, object, stride, column-major, memory access...] ->
                // [pointer, object, layout, stride, memory operands...]
                if (ins.size() < 5) fail("a matrix store with too few operands");
                Instruction khr{op_store_khr, ins[1], ins[2], layout(ins[4]), ins[3]};
                khr.insert(khr.end(), ins.begin() + 5, ins.end());
                emit(khr);
                break;
            }
            case op_mul_add_nv: {
                Instruction khr = ins;
                khr[0] = op_mul_add_khr;
                emit(khr);
                break;
            }
            case op_length_nv: {
                Instruction khr = ins;
                khr[0] = op_length_khr;
                emit(khr);
                break;
            }
            default: emit(ins);
        }
    }
    if (!rewrote) fail("the module has no VK_NV_cooperative_matrix type");
    out[3] = bound;
    return out;
}

}  // namespace rayo::vulkan::spirv
