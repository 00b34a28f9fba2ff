// What PTX instructions operate on: typed virtual registers, immediates, addresses and labels.
#pragma once

#include <bit>
#include <concepts>
#include <cstdint>
#include <string>
#include <variant>

#include "rayo/export.hpp"
#include "rayo/ptx/type.hpp"

namespace rayo::ptx {

// A typed virtual register of one kernel. Made only by Kernel; emitted as e.g. %f12.
class RAYO_API Reg {
public:
    Reg() = default;
    [[nodiscard]] Type type() const noexcept { return type_; }
    [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
    [[nodiscard]] std::uint32_t kernel() const noexcept { return kernel_; }
    [[nodiscard]] bool valid() const noexcept { return kernel_ != 0; }
    friend bool operator==(Reg, Reg) = default;

private:
    friend class Kernel;
    Reg(Type type, std::uint32_t id, std::uint32_t kernel) : type_(type), id_(id), kernel_(kernel) {}
    Type type_ = Type::b32;
    std::uint32_t id_ = 0;
    std::uint32_t kernel_ = 0;  // 0: not made by a kernel
};

// An immediate. Integers print in decimal; floats print as the exact bits of the instruction's
// float type (0f3F800000, 0d3FF0000000000000), so no value is rounded by a decimal round trip.
class RAYO_API Imm {
public:
    template <std::integral I>
    constexpr Imm(I v) noexcept : value_(static_cast<std::int64_t>(v)) {}  // NOLINT: implicit by design
    constexpr Imm(float v) noexcept : value_(v) {}                         // NOLINT
    constexpr Imm(double v) noexcept : value_(v) {}                        // NOLINT

    [[nodiscard]] constexpr bool is_integer() const noexcept { return std::holds_alternative<std::int64_t>(value_); }
    [[nodiscard]] constexpr bool is_float() const noexcept { return !is_integer(); }
    [[nodiscard]] constexpr std::int64_t integer() const { return std::get<std::int64_t>(value_); }
    // The value as a double (floats widen exactly).
    [[nodiscard]] constexpr double floating() const {
        if (auto const* f = std::get_if<float>(&value_)) return *f;
        return std::get<double>(value_);
    }
    [[nodiscard]] constexpr bool is_single() const noexcept { return std::holds_alternative<float>(value_); }

private:
    std::variant<std::int64_t, float, double> value_;
};

// The hex spelling PTX uses for float immediates of a type (f32 or f64, or f16/bf16 as their bits).
RAYO_API std::string float_immediate(double value, Type type);

// A branch target. Made by Kernel::label(), placed once with Kernel::place().
class RAYO_API Label {
public:
    Label() = default;
    [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
    [[nodiscard]] std::uint32_t kernel() const noexcept { return kernel_; }

private:
    friend class Kernel;
    Label(std::uint32_t id, std::uint32_t kernel) : id_(id), kernel_(kernel) {}
    std::uint32_t id_ = 0;
    std::uint32_t kernel_ = 0;
};

// A named variable of the kernel (a shared array, a parameter): used as an address base.
struct RAYO_API Symbol {
    std::string name;
};

// [base + offset]: base is a 32- or 64-bit integer register (shared and generic/global addresses)
// or a symbol.
struct RAYO_API Address {
    Address(Reg r, std::int64_t byte_offset = 0) : base(r), offset(byte_offset) {}                // NOLINT
    Address(Symbol s, std::int64_t byte_offset = 0) : base(std::move(s)), offset(byte_offset) {}  // NOLINT
    std::variant<Reg, Symbol> base;
    std::int64_t offset = 0;
};

// A source operand: a register or an immediate.
class RAYO_API Operand {
public:
    Operand(Reg r) : value_(r) {}  // NOLINT: implicit by design
    template <class T>
    requires std::constructible_from<Imm, T> Operand(T v) : value_(Imm(v)) {}  // NOLINT
    [[nodiscard]] bool is_reg() const noexcept { return std::holds_alternative<Reg>(value_); }
    [[nodiscard]] Reg reg() const { return std::get<Reg>(value_); }
    [[nodiscard]] Imm imm() const { return std::get<Imm>(value_); }

private:
    std::variant<Reg, Imm> value_;
};

}  // namespace rayo::ptx
