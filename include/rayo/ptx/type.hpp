// PTX fundamental types and the operand-type rules of the PTX ISA ("Operand type information").
#pragma once

#include <cstdint>
#include <string_view>

namespace rayo::ptx {

enum class Type : std::uint8_t {
    pred,
    b8,
    b16,
    b32,
    b64,
    u8,
    u16,
    u32,
    u64,
    s8,
    s16,
    s32,
    s64,
    f16,
    f16x2,
    bf16,
    bf16x2,
    f32,
    f64,
};

enum class TypeKind : std::uint8_t { predicate, bits, unsigned_int, signed_int, floating };

constexpr TypeKind kind_of(Type t) noexcept {
    switch (t) {
        case Type::pred: return TypeKind::predicate;
        case Type::b8:
        case Type::b16:
        case Type::b32:
        case Type::b64: return TypeKind::bits;
        case Type::u8:
        case Type::u16:
        case Type::u32:
        case Type::u64: return TypeKind::unsigned_int;
        case Type::s8:
        case Type::s16:
        case Type::s32:
        case Type::s64: return TypeKind::signed_int;
        default: return TypeKind::floating;
    }
}

constexpr int bits_of(Type t) noexcept {
    switch (t) {
        case Type::pred: return 1;
        case Type::b8:
        case Type::u8:
        case Type::s8: return 8;
        case Type::b16:
        case Type::u16:
        case Type::s16:
        case Type::f16:
        case Type::bf16: return 16;
        case Type::b32:
        case Type::u32:
        case Type::s32:
        case Type::f32:
        case Type::f16x2:
        case Type::bf16x2: return 32;
        case Type::b64:
        case Type::u64:
        case Type::s64:
        case Type::f64: return 64;
    }
    return 0;
}

constexpr int bytes_of(Type t) noexcept { return t == Type::pred ? 0 : bits_of(t) / 8; }

constexpr bool is_integer(Type t) noexcept {
    return kind_of(t) == TypeKind::unsigned_int || kind_of(t) == TypeKind::signed_int;
}
constexpr bool is_float(Type t) noexcept { return kind_of(t) == TypeKind::floating; }

constexpr std::string_view name_of(Type t) noexcept {
    constexpr std::string_view names[] = {"pred", "b8",  "b16", "b32", "b64",   "u8",   "u16",    "u32", "u64", "s8",
                                          "s16",  "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64"};
    return names[static_cast<int>(t)];
}

// Whether a register declared as `reg` may stand where an instruction of type `instr` expects an
// operand. PTX: a .bN instruction takes any N-bit register; .uN/.sN take any N-bit integer or bit
// register; a float type takes the same float type or an N-bit bit register.
constexpr bool register_fits(Type instr, Type reg) noexcept {
    if (instr == Type::pred || reg == Type::pred) return instr == reg;
    if (bits_of(instr) != bits_of(reg)) return false;
    switch (kind_of(instr)) {
        case TypeKind::bits: return true;
        case TypeKind::unsigned_int:
        case TypeKind::signed_int: return kind_of(reg) != TypeKind::floating;
        case TypeKind::floating: return reg == instr || kind_of(reg) == TypeKind::bits;
        case TypeKind::predicate: return false;
    }
    return false;
}

// ld/st/cvt of 8- and 16-bit integer types may use wider integer registers (the value is
// zero- or sign-extended, or truncated), as `ld.global.u8 %r1` does.
constexpr bool register_fits_widening(Type instr, Type reg) noexcept {
    if (register_fits(instr, reg)) return true;
    return kind_of(instr) != TypeKind::floating && kind_of(instr) != TypeKind::predicate &&
           kind_of(reg) != TypeKind::floating && kind_of(reg) != TypeKind::predicate && bits_of(reg) > bits_of(instr);
}

}  // namespace rayo::ptx
