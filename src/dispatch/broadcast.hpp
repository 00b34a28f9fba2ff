// Broadcasting, NumPy's rules: shapes are aligned at their last axes, and two lengths match when
// they are equal or one of them is 1 (that operand repeats along the axis). An operand is seen
// through a view of the result's shape with stride 0 along the axes it repeats; kernels walk the
// views collapsed to the fewest axes (collapse()).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/tensor_view.hpp"
#include "rayo/error.hpp"
#include "rayo/shape.hpp"

namespace rayo::detail {

// The shape a and b broadcast to; a ShapeError naming the op and both shapes when they do not, or
// when the result would have more than max_view_rank axes.
[[nodiscard]] inline Shape broadcast_shapes(std::string_view op, Shape const& a, Shape const& b) {
    std::size_t const rank = std::max(a.rank(), b.rank());
    if (rank > max_view_rank && a != b)
        throw ShapeError(std::string(op) + ": broadcasting takes up to " + std::to_string(max_view_rank) +
                         " axes, got " + a.to_string() + " and " + b.to_string());
    std::vector<std::int64_t> dims(rank);
    for (std::size_t j = 0; j < rank; ++j) {
        std::int64_t const da = j < a.rank() ? a[a.rank() - 1 - j] : 1;
        std::int64_t const db = j < b.rank() ? b[b.rank() - 1 - j] : 1;
        if (da != db && da != 1 && db != 1)
            throw ShapeError(std::string(op) + ": shapes " + a.to_string() + " and " + b.to_string() +
                             " do not broadcast (axis " + std::to_string(j + 1) +
                             " from the end: " + std::to_string(da) + " and " + std::to_string(db) + ")");
        dims[rank - 1 - j] = da == 1 ? db : da;
    }
    return Shape(std::move(dims));
}

// The contiguous view v (of a shape that broadcasts to `to`) seen with `to`'s shape: stride 0 along
// the axes it repeats. `to` has at most max_view_rank axes.
[[nodiscard]] inline TensorView broadcast_view(TensorView const& v, std::span<std::int64_t const> to) noexcept {
    TensorView out = v;
    out.rank = static_cast<std::uint8_t>(to.size());
    std::size_t const lead = to.size() - v.rank;  // axes of `to` that v does not have
    std::int64_t stride = 1;
    for (std::size_t i = max_view_rank; i-- > 0;) {
        if (i >= to.size()) {  // unused axes, as contiguous_view leaves them
            out.shape[i] = 1;
            out.strides[i] = 0;
            continue;
        }
        std::int64_t const len = i >= lead ? v.shape[i - lead] : 1;
        out.shape[i] = to[i];
        out.strides[i] = len == 1 ? 0 : stride;
        stride *= len;
    }
    return out;
}

// Element-wise operands over one output, collapsed to the fewest axes: axes of length 1 dropped,
// and neighbours merged where every operand is contiguous across both or repeats along both.
// dims[0] is the outermost; strides count elements (0: repeated). A single element is rank 1.
struct StridedLayout {
    static constexpr std::size_t max_operands = 2;
    std::size_t rank = 0;
    std::array<std::size_t, max_view_rank> dims{};
    std::array<std::array<std::size_t, max_view_rank>, max_operands> strides{};

    [[nodiscard]] std::size_t inner() const noexcept { return dims[rank - 1]; }
    [[nodiscard]] std::size_t numel() const noexcept {
        std::size_t n = 1;
        for (std::size_t i = 0; i < rank; ++i) n *= dims[i];
        return n;
    }
    // The layout as the GPU kernels take it: dims, then operand 0's strides, then operand 1's,
    // max_view_rank 32-bit values each (zero past rank).
    [[nodiscard]] std::array<std::uint32_t, 3 * max_view_rank> packed() const noexcept {
        std::array<std::uint32_t, 3 * max_view_rank> p{};
        for (std::size_t i = 0; i < rank; ++i) {
            p[i] = static_cast<std::uint32_t>(dims[i]);
            p[max_view_rank + i] = static_cast<std::uint32_t>(strides[0][i]);
            p[2 * max_view_rank + i] = static_cast<std::uint32_t>(strides[1][i]);
        }
        return p;
    }
    // The offset of operand `o`'s element at flat output index `index` (a multiple of inner()
    // plus a position in the row).
    [[nodiscard]] std::size_t offset(std::size_t o, std::size_t index) const noexcept {
        std::size_t off = 0;
        for (std::size_t i = rank; i-- > 0;) {
            off += index % dims[i] * strides[o][i];
            index /= dims[i];
        }
        return off;
    }
};

// The layout of `operands` (views of out's shape, at most StridedLayout::max_operands of them).
[[nodiscard]] inline StridedLayout collapse(TensorView const& out, std::span<TensorView const> operands) noexcept {
    StridedLayout l;
    for (std::size_t i = 0; i < out.rank; ++i) {
        if (out.shape[i] == 1) continue;
        auto const len = static_cast<std::size_t>(out.shape[i]);
        bool merge = l.rank > 0;
        for (std::size_t o = 0; o < operands.size() && merge; ++o)
            merge = l.strides[o][l.rank - 1] == static_cast<std::size_t>(operands[o].strides[i]) * len;
        if (merge) {
            l.dims[l.rank - 1] *= len;
            for (std::size_t o = 0; o < operands.size(); ++o)
                l.strides[o][l.rank - 1] = static_cast<std::size_t>(operands[o].strides[i]);
            continue;
        }
        l.dims[l.rank] = len;
        for (std::size_t o = 0; o < operands.size(); ++o)
            l.strides[o][l.rank] = static_cast<std::size_t>(operands[o].strides[i]);
        ++l.rank;
    }
    if (l.rank == 0) {  // a single element
        l.rank = 1;
        l.dims[0] = 1;
        for (std::size_t o = 0; o < operands.size(); ++o) l.strides[o][0] = 1;
    }
    return l;
}

// A copy that transposes matrices: out[b][r, c] = in[b][c, r] for a batch of them. Sizes of out,
// strides in elements.
struct Transposition {
    std::size_t batch = 1, rows = 0, cols = 0;
    std::size_t in_stride = 0, out_stride = 0;  // between consecutive rows of in (out's columns) and of out
    std::size_t in_batch = 0, out_batch = 0;    // between consecutive matrices
};

// The copy from operand 0 to operand 1 of `l` as a batch of transpositions, where it is one: its
// last two axes swap which operand runs contiguously along them (in along the rows, out along the
// columns), behind at most one batch axis.
[[nodiscard]] inline std::optional<Transposition> as_transposition(StridedLayout const& l) noexcept {
    if (l.rank != 2 && l.rank != 3) return std::nullopt;
    std::size_t const r = l.rank - 2, c = l.rank - 1;
    auto const& in = l.strides[0];
    auto const& out = l.strides[1];
    if (in[r] != 1 || out[c] != 1 || in[c] == 1) return std::nullopt;
    Transposition t{1, l.dims[r], l.dims[c], in[c], out[r], 0, 0};
    if (l.rank == 3) t = {l.dims[0], l.dims[r], l.dims[c], in[c], out[r], in[0], out[0]};
    return t;
}

}  // namespace rayo::detail
