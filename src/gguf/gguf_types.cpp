// The ggml tensor types a GGUF file may name, and the metadata value type names.
#include <iterator>

#include "rayo/gguf.hpp"

namespace rayo::gguf {

namespace {

// Block sizes as ggml defines them (ggml-common.h). Ids 4, 5 and 31-33, 36-38 were removed from
// ggml and are not accepted in files.
constexpr TypeInfo types[] = {
    {0, "F32", 1, 4, DType::f32},           {1, "F16", 1, 2, DType::f16},
    {2, "Q4_0", 32, 18, DType::q4_0},       {3, "Q4_1", 32, 20, std::nullopt},
    {6, "Q5_0", 32, 22, std::nullopt},      {7, "Q5_1", 32, 24, std::nullopt},
    {8, "Q8_0", 32, 34, DType::q8_0},       {9, "Q8_1", 32, 36, std::nullopt},
    {10, "Q2_K", 256, 84, std::nullopt},    {11, "Q3_K", 256, 110, std::nullopt},
    {12, "Q4_K", 256, 144, DType::q4_k},    {13, "Q5_K", 256, 176, DType::q5_k},
    {14, "Q6_K", 256, 210, DType::q6_k},    {15, "Q8_K", 256, 292, DType::q8_k},
    {16, "IQ2_XXS", 256, 66, std::nullopt}, {17, "IQ2_XS", 256, 74, std::nullopt},
    {18, "IQ3_XXS", 256, 98, std::nullopt}, {19, "IQ1_S", 256, 50, std::nullopt},
    {20, "IQ4_NL", 32, 18, std::nullopt},   {21, "IQ3_S", 256, 110, std::nullopt},
    {22, "IQ2_S", 256, 82, std::nullopt},   {23, "IQ4_XS", 256, 136, std::nullopt},
    {24, "I8", 1, 1, std::nullopt},         {25, "I16", 1, 2, std::nullopt},
    {26, "I32", 1, 4, DType::i32},          {27, "I64", 1, 8, DType::i64},
    {28, "F64", 1, 8, std::nullopt},        {29, "IQ1_M", 256, 56, std::nullopt},
    {30, "BF16", 1, 2, DType::bf16},        {34, "TQ1_0", 256, 54, std::nullopt},
    {35, "TQ2_0", 256, 66, std::nullopt},   {39, "MXFP4", 32, 17, std::nullopt},
};
constexpr std::size_t type_count = std::size(types);

}  // namespace

TypeInfo const* type_info(std::uint32_t ggml_type) noexcept {
    for (std::size_t i = 0; i < type_count; ++i)
        if (types[i].id == ggml_type) return &types[i];
    return nullptr;
}

std::span<TypeInfo const> known_types() noexcept { return types; }

std::uint32_t type_id(DType t) noexcept {
    switch (t) {
        case DType::f32: return 0;
        case DType::f16: return 1;
        case DType::bf16: return 30;
        case DType::i32: return 26;
        case DType::i64: return 27;
        case DType::q4_k: return 12;
        case DType::q6_k: return 14;
        case DType::q8_k: return 15;
        case DType::q8_0: return 8;
        case DType::q4_0: return 2;
        case DType::q5_k: return 13;
    }
    return 0;
}

std::string_view to_string(ValueType t) noexcept {
    switch (t) {
        case ValueType::u8: return "u8";
        case ValueType::i8: return "i8";
        case ValueType::u16: return "u16";
        case ValueType::i16: return "i16";
        case ValueType::u32: return "u32";
        case ValueType::i32: return "i32";
        case ValueType::f32: return "f32";
        case ValueType::boolean: return "bool";
        case ValueType::string: return "string";
        case ValueType::array: return "array";
        case ValueType::u64: return "u64";
        case ValueType::i64: return "i64";
        case ValueType::f64: return "f64";
    }
    return "?";
}

}  // namespace rayo::gguf
