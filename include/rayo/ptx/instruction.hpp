// One PTX instruction as the builder records it: an opcode and typed operand uses, so the verifier
// can check every register against the type the instruction expects before any text is emitted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "rayo/export.hpp"
#include "rayo/ptx/operand.hpp"
#include "rayo/ptx/target.hpp"
#include "rayo/ptx/type.hpp"

namespace rayo::ptx {

enum class Access : std::uint8_t { read, write, read_write };
// exact: register_fits; widening: register_fits_widening (ld/st/cvt of narrow integers).
enum class Fit : std::uint8_t { exact, widening };

struct RAYO_API RegUse {
    Reg reg;
    Type expected;
    Access access = Access::read;
    Fit fit = Fit::exact;
};
struct RAYO_API ImmUse {
    Imm value;
    Type type;  // how the immediate is spelled: decimal for integers, hex bits for floats
};
struct RAYO_API AddressUse {
    Address address;
};
struct RAYO_API VectorUse {  // {%f1, %f2, %f3, %f4}
    std::vector<RegUse> elements;
};
struct RAYO_API LabelUse {
    Label label;
};
// [map, {c0, c1, ...}]: a tensor map's generic address and the .s32 coordinates of a box
// (cp.async.bulk.tensor).
struct RAYO_API TensorAddressUse {
    RegUse map;
    std::vector<RegUse> coordinates;
};
struct RAYO_API TextUse {  // emitted verbatim: special registers, symbols, modifiers such as a barrier id
    std::string text;
};
using OperandUse = std::variant<RegUse, ImmUse, AddressUse, VectorUse, LabelUse, TextUse, TensorAddressUse>;

// What an instruction needs of the target (PTX ISA, "Target ISA notes").
struct RAYO_API Requirement {
    int compute_capability = 0;          // e.g. 80 for cp.async
    bool architecture_specific = false;  // sm_90a-only (wgmma)
};

struct RAYO_API Guard {
    Reg predicate;
    bool when = true;  // @p (true) or @!p (false)
};

struct RAYO_API Instruction {
    enum class Kind : std::uint8_t { operation, label, comment };
    Kind kind = Kind::operation;
    std::string opcode;  // "add.f32", "ld.global.v4.f32"; the comment text for comments
    std::vector<OperandUse> operands;
    std::optional<Guard> guard;
    Requirement requires_target;
    Label placed;  // for Kind::label
};

}  // namespace rayo::ptx
