// f16 and bf16 tensors through the CPU's f32 kernels: a block of values widened into an f32 buffer
// on the stack (it stays in the L1 cache), the f32 kernel run on it, and the results narrowed back
// into the tensor's type. f32 tensors never come here.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "cpu/kernel_runner.hpp"

namespace rayo::cpu::ops {

// Values per staged block: 4 KiB of f32 per operand.
inline constexpr std::size_t staging_block = 1024;

// The address of element `index` of 16-bit data at `base`.
template <class Byte>
Byte* element16(Byte* base, std::size_t index) noexcept {
    return base + index * 2;
}

// f32_kernel(inputs, out, count) over elements [begin, end) of `Inputs` 16-bit inputs of `type` and
// a 16-bit output: each block of the inputs widened into buffers, the result narrowed into `out`.
template <std::size_t Inputs, class F32Kernel>
void staged_blocks(KernelTable const& k, DType type, std::array<std::byte const*, Inputs> in, std::byte* out,
                   std::size_t begin, std::size_t end, F32Kernel&& f32_kernel) {
    float widened[Inputs][staging_block];
    float result[staging_block];
    for (std::size_t s = begin; s < end; s += staging_block) {
        std::size_t const m = std::min(staging_block, end - s);
        std::array<float const*, Inputs> values{};
        for (std::size_t i = 0; i < Inputs; ++i) {
            k.widen(type, element16(in[i], s), widened[i], m);
            values[i] = widened[i];
        }
        f32_kernel(values, result, m);
        k.narrow(type, result, element16(out, s), m);
    }
}

// A whole 16-bit tensor of `count` values as f32 (gamma and beta of the norms, rows of softmax).
inline void widen_all(KernelTable const& k, DType type, std::byte const* in, std::size_t count,
                      std::vector<float>& out) {
    out.resize(count);
    if (count) k.widen(type, in, out.data(), count);
}

// f32_row(x, y) for rows [begin, end) of `cols` 16-bit values from `in` to `out`: each row
// widened into a buffer, the result narrowed back.
template <class F32Row>
void staged_rows(KernelTable const& k, DType type, std::byte const* in, std::byte* out, std::size_t begin,
                 std::size_t end, std::size_t cols, F32Row&& f32_row) {
    std::vector<float> row, result(cols);
    for (std::size_t i = begin; i < end; ++i) {
        widen_all(k, type, element16(in, i * cols), cols, row);
        f32_row(row.data(), result.data());
        k.narrow(type, result.data(), element16(out, i * cols), cols);
    }
}

}  // namespace rayo::cpu::ops
