// What a kernel that copies tiles with the tensor memory accelerator (Kernel::tma_load /
// tma_store) needs of the host: the description of each tensor map it takes as a parameter. A
// CUDA runtime encodes it into the driver's 128-byte CUtensorMap with cuTensorMapEncodeTiled; the
// generators that use the TMA say which maps their kernels take (e.g. gemm_tensor_maps).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "rayo/export.hpp"
#include "rayo/ptx/type.hpp"

namespace rayo::ptx {

// How a box lands in shared memory (CU_TENSOR_MAP_SWIZZLE_*): with swizzle_128b, the 16-byte
// chunk c of the box's row r (rows of at most 128 bytes) is stored at chunk c ^ (r % 8) of its
// 128-byte line, so that 8 consecutive rows read down one column fall on 8 different bank groups.
// The box's inner dimension is then at most 128 bytes and its shared address 1024-byte aligned.
enum class TensorMapSwizzle : std::uint8_t { none, swizzle_32b, swizzle_64b, swizzle_128b };

// A tiled tensor map over a strided tensor in global memory. Dimensions run innermost first;
// elements outside the tensor read as zero (and are not written by stores).
struct RAYO_API TensorMapSpec {
    std::uint64_t address = 0;            // the element at coordinates 0 (16-byte aligned)
    Type element = Type::f16;             // f16, bf16, f32 (or any type of 1, 2, 4 or 8 bytes)
    unsigned rank = 2;                    // 1 to 5
    std::array<std::uint64_t, 5> dims{};  // elements per dimension
    std::array<std::uint64_t, 5>
        strides{};  // bytes between consecutive indices of dimension i ≥ 1 (multiples of 16); [0] unused
    std::array<std::uint32_t, 5> box{};  // elements one copy moves per dimension (1 to 256)
    TensorMapSwizzle swizzle = TensorMapSwizzle::none;
};

// The encoded map as a kernel parameter receives it (CUtensorMap: 128 bytes, 64-byte aligned).
struct alignas(64) TensorMap {
    std::array<std::byte, 128> bytes{};
};

}  // namespace rayo::ptx
