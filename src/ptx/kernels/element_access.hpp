// How kernels read and write elements of f32, f16 and bf16 tensors as .f32 registers: a load of
// the stored bits widened exactly (cvt.f32.f16; bf16 as the top half of a float), a store rounded
// to nearest even (cvt.rn.f16.f32 / cvt.rn.bf16.f32: NaN and ±Inf kept, overflow to ±Inf).
// Groups of 4 consecutive elements are one 16-byte (f32) or 8-byte (16-bit) access. Shared by cast
// and the element-wise, softmax, norm and reduction generators. Not part of the API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rayo/dtype.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels::element_detail {

[[nodiscard]] inline bool is_16bit(DType t) { return t == DType::f16 || t == DType::bf16; }

// The suffix of a kernel's name for its element type: none for f32 (the names f32 kernels always
// had), _f16 or _bf16.
[[nodiscard]] inline std::string element_suffix(DType element) {
    std::string suffix;
    if (element != DType::f32) suffix.append("_").append(to_string(element));
    return suffix;
}

// Throws BuildError unless the element type is one the floating kernels take: f32, f16 or bf16.
inline void check_floating(std::string const& kernel, DType element) {
    if (element != DType::f32 && !is_16bit(element))
        throw BuildError("ptx kernel '" + kernel + "': elements must be f32, f16 or bf16, not " +
                         std::string(to_string(element)));
}

// The register type of a stored element: .b16 for f16 / bf16, .f32, .s32.
[[nodiscard]] inline Type raw_type(DType type) {
    return is_16bit(type) ? Type::b16 : type == DType::i32 ? Type::s32 : Type::f32;
}

// The input type of a tensor-core MMA on 16-bit elements: .f16 or .bf16.
[[nodiscard]] inline Type mma_type(DType element) { return element == DType::bf16 ? Type::bf16 : Type::f16; }

// log2 of the element's size in bytes.
[[nodiscard]] inline unsigned size_shift(DType type) { return is_16bit(type) ? 1 : 2; }

// An element's raw register as an .f32 register (or the .s32 of an i32): exact for every float type.
[[nodiscard]] inline Reg widen(Kernel& k, DType type, Reg raw) {
    if (type == DType::f32 || type == DType::i32) return raw;
    if (type == DType::f16) return k.cvt(Type::f32, k.bitcast(Type::f16, raw));
    return k.bitcast(Type::f32,
                     k.shl(k.cvt(Type::u32, k.bitcast(Type::u16, raw)), 16));  // bf16: the top half of a float
}

// An .f32 value as the raw register of `type` (f32, f16 or bf16), rounded to nearest even.
[[nodiscard]] inline Reg narrow(Kernel& k, DType type, Reg value) {
    if (type == DType::f16) return k.bitcast(Type::b16, k.cvt(Type::f16, value, Rounding::rn));
    if (type == DType::bf16) return k.bitcast(Type::b16, k.cvt(Type::bf16, value, Rounding::rn));
    return value;
}

// The element at `address` as .f32.
[[nodiscard]] inline Reg load(Kernel& k, DType type, Address const& address) {
    return widen(k, type, k.ld(Space::global, raw_type(type), address));
}

// Element `index` (a .u64 or .u32 register) of the array at `base`, as .f32.
[[nodiscard]] inline Reg load_at(Kernel& k, DType type, Reg base, Reg index) {
    return load(k, type, k.element_address(base, index, 1u << size_shift(type)));
}

inline void store(Kernel& k, DType type, Address const& address, Reg value) {
    k.st(Space::global, raw_type(type), address, narrow(k, type, value));
}

// The raw registers of 4 consecutive elements at `address` (aligned to 4 elements).
[[nodiscard]] inline std::vector<Reg> load_four_raw(Kernel& k, DType type, Address const& address) {
    if (!is_16bit(type)) return k.ld_vector(Space::global, raw_type(type), 4, address);
    std::vector<Reg> raw;
    for (Reg word : k.ld_vector(Space::global, Type::b32, 2, address))
        for (Reg half : k.split(word, Type::b16)) raw.push_back(half);
    return raw;
}

// 4 raw registers to consecutive elements at `address` (aligned to 4 elements).
inline void store_four_raw(Kernel& k, DType type, Address const& address, std::vector<Reg> const& raw) {
    if (!is_16bit(type)) return k.st_vector(Space::global, raw_type(type), address, raw);
    std::vector<Reg> const words{k.join(Type::b32, raw[0], raw[1]), k.join(Type::b32, raw[2], raw[3])};
    k.st_vector(Space::global, Type::b32, address, words);
}

// 4 consecutive elements as .f32, and back.
[[nodiscard]] inline std::vector<Reg> load_four(Kernel& k, DType type, Address const& address) {
    std::vector<Reg> values;
    for (Reg raw : load_four_raw(k, type, address)) values.push_back(widen(k, type, raw));
    return values;
}

inline void store_four(Kernel& k, DType type, Address const& address, std::vector<Reg> const& values) {
    std::vector<Reg> raw;
    for (Reg v : values) raw.push_back(narrow(k, type, v));
    store_four_raw(k, type, address, raw);
}

}  // namespace rayo::ptx::kernels::element_detail
