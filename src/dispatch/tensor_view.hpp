// How a backend sees a tensor operand: a buffer of the backend's, a byte offset into it, an
// element type, and a shape with strides. Shapes and strides count elements (values, for the block
// types); a stride of 0 repeats one element along that axis (broadcasting). Kernels that need
// contiguous operands check is_contiguous() and keep their fast paths.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "rayo/dtype.hpp"

namespace rayo::detail {

// The most axes a view has; tensors of higher rank are seen with their leading axes merged.
inline constexpr std::size_t max_view_rank = 8;

struct TensorView {
    std::uintptr_t buffer = 0;  // the backend's handle
    std::size_t offset = 0;     // in bytes, from the start of the buffer
    DType dtype = DType::f32;
    bool present = false;  // false: an optional operand that was not given
    std::uint8_t rank = 0;
    // Axes past `rank` are not read. (No default initialiser: the dispatcher makes views on every
    // op, and zeroing what it then overwrites is measurable on small ops; TensorView{} zeroes.)
    std::array<std::int64_t, max_view_rank> shape;
    std::array<std::int64_t, max_view_rank> strides;

    [[nodiscard]] std::span<std::int64_t const> dims() const noexcept { return {shape.data(), rank}; }
    [[nodiscard]] std::size_t numel() const noexcept {
        std::size_t n = 1;
        for (std::size_t i = 0; i < rank; ++i) n *= static_cast<std::size_t>(shape[i]);
        return n;
    }
    // The last axis's length (1 for a scalar): the row length of the row-wise ops.
    [[nodiscard]] std::size_t cols() const noexcept { return rank ? static_cast<std::size_t>(shape[rank - 1]) : 1; }
    [[nodiscard]] std::size_t rows() const noexcept {
        std::size_t const c = cols();
        return c ? numel() / c : 0;
    }
    // Row-major with no gaps and no repeats (an empty view counts as contiguous).
    [[nodiscard]] bool is_contiguous() const noexcept {
        std::int64_t expected = 1;
        for (std::size_t i = rank; i-- > 0;) {
            if (shape[i] == 0) return true;
            if (shape[i] != 1 && strides[i] != expected) return false;
            expected *= shape[i];
        }
        return true;
    }
    // The bytes a contiguous view spans.
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_for(dtype, numel()); }
    // The bytes from the view's first element to its last, through its strides (a broadcast view
    // spans only the elements it repeats; block types count values, and views hold whole blocks).
    [[nodiscard]] std::size_t span_bytes() const noexcept {
        if (numel() == 0) return 0;
        std::size_t last = 0;
        for (std::size_t i = 0; i < rank; ++i)
            last += static_cast<std::size_t>(shape[i] - 1) * static_cast<std::size_t>(strides[i]);
        return bytes_for(dtype, last + 1);
    }
};

// A contiguous row-major view of `dims` (at most max_view_rank of them: merge leading axes first).
[[nodiscard]] inline TensorView contiguous_view(std::uintptr_t buffer, std::size_t offset, DType dtype,
                                                std::span<std::int64_t const> dims) noexcept {
    TensorView v;
    v.buffer = buffer;
    v.offset = offset;
    v.dtype = dtype;
    v.present = true;
    v.rank = static_cast<std::uint8_t>(dims.size());
    // Every axis written, the unused ones as 1-long, in a loop of fixed length (plain stores).
    std::int64_t stride = 1;
    for (std::size_t j = 0; j < max_view_rank; ++j) {
        std::size_t const i = max_view_rank - 1 - j;
        bool const used = i < dims.size();
        std::int64_t const d = used ? dims[i] : 1;
        v.shape[i] = d;
        v.strides[i] = used ? stride : 0;
        stride *= d;
    }
    return v;
}

}  // namespace rayo::detail
