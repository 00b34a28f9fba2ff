#include "cuda/tensor_map.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#include "rayo/error.hpp"

namespace rayo::cuda {

namespace {

CUtensorMapDataType data_type(ptx::Type t) {
    switch (t) {
        case ptx::Type::f16: return CUtensorMapDataType::float16;
        case ptx::Type::bf16: return CUtensorMapDataType::bfloat16;
        case ptx::Type::f32: return CUtensorMapDataType::float32;
        case ptx::Type::f64: return CUtensorMapDataType::float64;
        case ptx::Type::s32: return CUtensorMapDataType::int32;
        case ptx::Type::s64: return CUtensorMapDataType::int64;
        default: break;
    }
    switch (ptx::bits_of(t)) {
        case 8: return CUtensorMapDataType::uint8;
        case 16: return CUtensorMapDataType::uint16;
        case 32: return CUtensorMapDataType::uint32;
        default: return CUtensorMapDataType::uint64;
    }
}

CUtensorMapSwizzle swizzle(ptx::TensorMapSwizzle s) {
    switch (s) {
        case ptx::TensorMapSwizzle::none: return CUtensorMapSwizzle::none;
        case ptx::TensorMapSwizzle::swizzle_32b: return CUtensorMapSwizzle::swizzle_32b;
        case ptx::TensorMapSwizzle::swizzle_64b: return CUtensorMapSwizzle::swizzle_64b;
        case ptx::TensorMapSwizzle::swizzle_128b: return CUtensorMapSwizzle::swizzle_128b;
    }
    return CUtensorMapSwizzle::none;
}

std::string describe(ptx::TensorMapSpec const& spec) {
    std::string dims, strides, box;
    for (unsigned i = 0; i < spec.rank; ++i) {
        dims.append(i ? "x" : "").append(std::to_string(spec.dims[i]));
        box.append(i ? "x" : "").append(std::to_string(spec.box[i]));
        if (i > 0) strides.append(i > 1 ? "," : "").append(std::to_string(spec.strides[i]));
    }
    char address[24];
    std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(spec.address));
    std::string text = ".";
    text.append(ptx::name_of(spec.element)).append(" tensor of ").append(dims).append(" (innermost first; strides ");
    text.append(strides).append(" bytes) at ").append(address).append(", boxes of ").append(box);
    return text;
}

}  // namespace

ptx::TensorMap encode_tensor_map(PrimaryContext const& context, ptx::TensorMapSpec const& spec) {
    Driver const& d = context.driver();
    if (!d.cuTensorMapEncodeTiled)
        throw Unsupported(context.label() + ": the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer)");
    if (spec.rank == 0 || spec.rank > 5)
        throw Unsupported(context.label() + ": a tensor map of rank " + std::to_string(spec.rank) + " (1 to 5)");
    constexpr std::uint32_t element_strides[5] = {1, 1, 1, 1, 1};
    CUtensorMap map{};
    CUresult const result = d.cuTensorMapEncodeTiled(
        &map, data_type(spec.element), spec.rank, reinterpret_cast<void*>(spec.address), spec.dims.data(),
        spec.strides.data() + 1, spec.box.data(), element_strides, CUtensorMapInterleave::none, swizzle(spec.swizzle),
        CUtensorMapL2promotion::l2_256b, CUtensorMapFloatOOBfill::none);
    if (result != CUresult::success)
        throw_error(result, context.label() + ": cuTensorMapEncodeTiled(" + describe(spec) + ")");
    ptx::TensorMap out;
    static_assert(sizeof map == sizeof out.bytes);
    std::memcpy(out.bytes.data(), &map, sizeof map);
    return out;
}

}  // namespace rayo::cuda
