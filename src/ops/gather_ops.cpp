// The gathers: embedding and index_select, one op::Gather each (the block-quantized tables' rows gathered
// as blocks, then decoded by dequantize), and index_copy, the scatter back along the same geometry.
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"
#include "rayo/quant.hpp"

namespace rayo {

namespace {

// The table seen around the gathered axis `a`, with ids.numel() entries taken along it.
template <class T>
detail::op::Gather geometry(Op op, Tensor<T> const& table, std::size_t a) {
    detail::op::Gather g{op, 1, static_cast<std::size_t>(table.shape()[a]), 1};
    for (std::size_t i = 0; i < table.rank(); ++i) {
        auto const d = static_cast<std::size_t>(table.shape()[i]);
        if (i < a) g.outer *= d;
        if (i > a) g.row *= d;
    }
    return g;
}

// ids as the dispatch takes them: a contiguous rank-1 view of its numel() entries.
detail::OpArg ids_arg(Tensor<std::int32_t> const& ids) {
    detail::OpArg arg = detail::arg(ids);
    std::int64_t const n = static_cast<std::int64_t>(ids.numel());
    arg.view = detail::contiguous_view(arg.view.buffer, arg.view.offset, DType::i32, {&n, 1});
    return arg;
}

// Checks what every gather needs of its operands, then runs it into `out`.
template <class T, class O>
void gather_into(Op op, Tensor<T> const& table, Tensor<std::int32_t> const& ids, detail::op::Gather const& g,
                 Shape const& shape, Tensor<O> const& out) {
    std::string const name(to_string(op));
    detail::check_same_device(name, table, ids);
    detail::check_out(name, out, shape, table, false);
    detail::check_out(name, out, shape, ids, false);
    if (out.numel() == 0) return;
    detail::dispatch(table.device(), g, {detail::arg(table), ids_arg(ids)}, {detail::arg(out)});
}

template <class W>
Shape embedding_shape(Tensor<W> const& table, Tensor<std::int32_t> const& ids) {
    if (table.rank() != 2)
        throw ShapeError("embedding: the table must be [rows, dim], got shape " + table.shape().to_string());
    std::vector<std::int64_t> dims(ids.shape().dims().begin(), ids.shape().dims().end());
    dims.push_back(table.shape()[1]);
    return Shape(std::move(dims));
}

template <class T>
Shape index_select_shape(Tensor<T> const& x, int axis, Tensor<std::int32_t> const& ids) {
    if (x.rank() == 0) throw ShapeError("index_select: x is a scalar (rank 0); it has no axis to select along");
    std::size_t const a = x.shape().axis(axis);
    if (ids.rank() > 1)
        throw ShapeError("index_select: ids must have rank 0 or 1, got shape " + ids.shape().to_string());
    std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims[a] = static_cast<std::int64_t>(ids.numel());
    return Shape(std::move(dims));
}

// Checks index_copy's operands: src is dst's shape with the axis ids.numel() long.
template <class T>
void check_index_copy(Tensor<T> const& src, std::size_t a, Tensor<std::int32_t> const& ids, Tensor<T> const& dst) {
    detail::check_same_device("index_copy", dst, src);
    detail::check_same_device("index_copy", dst, ids);
    if (ids.rank() > 1) throw ShapeError("index_copy: ids must have rank 0 or 1, got shape " + ids.shape().to_string());
    std::vector<std::int64_t> dims(dst.shape().dims().begin(), dst.shape().dims().end());
    dims[a] = static_cast<std::int64_t>(ids.numel());
    if (src.shape() != Shape(dims))
        throw ShapeError("index_copy: src " + src.shape().to_string() + " must be dst " + dst.shape().to_string() +
                         " with axis " + std::to_string(a) + " " + std::to_string(ids.numel()) +
                         " long (the ids), i.e. " + Shape(dims).to_string());
    if (detail::overlaps(src, dst)) throw Error("index_copy: src and dst share memory");
    if (detail::overlaps(ids, dst)) throw Error("index_copy: ids and dst share memory");
}

}  // namespace

template <EmbeddingTable W>
void embedding_into(Tensor<W> const& table, Tensor<std::int32_t> const& ids, Tensor<embedding_result_t<W>> const& out) {
    Shape const shape = embedding_shape(table, ids);
    detail::op::Gather const g = geometry(Op::embedding, table, 0);
    if constexpr (FloatingElement<W>) {
        gather_into(Op::embedding, table, ids, g, shape, out);
    } else {
        // The rows' blocks gathered, then decoded: one pass over the few rows picked.
        detail::check_out("embedding", out, shape, table, false);
        std::int64_t const n = static_cast<std::int64_t>(ids.numel()), dim = table.shape()[1];
        Tensor<W> const blocks = Tensor<W>::empty(Shape{n, dim}, table.device());
        gather_into(Op::embedding, table, ids, g, blocks.shape(), blocks);
        if (blocks.numel()) dequantize_into(blocks, out.reshape({n, dim}));
    }
}

template <EmbeddingTable W>
Tensor<embedding_result_t<W>> embedding(Tensor<W> const& table, Tensor<std::int32_t> const& ids) {
    Tensor<embedding_result_t<W>> out =
        Tensor<embedding_result_t<W>>::empty(embedding_shape(table, ids), table.device());
    embedding_into(table, ids, out);
    return out;
}

template <CastElement T>
void index_select_into(Tensor<T> const& x, int axis, Tensor<std::int32_t> const& ids, Tensor<T> const& out) {
    Shape const shape = index_select_shape(x, axis, ids);
    gather_into(Op::index_select, x, ids, geometry(Op::index_select, x, x.shape().axis(axis)), shape, out);
}

template <CastElement T>
Tensor<T> index_select(Tensor<T> const& x, int axis, Tensor<std::int32_t> const& ids) {
    Tensor<T> out = Tensor<T>::empty(index_select_shape(x, axis, ids), x.device());
    index_select_into(x, axis, ids, out);
    return out;
}

template <CastElement T>
void index_copy_into(Tensor<T> const& src, int axis, Tensor<std::int32_t> const& ids, Tensor<T> const& dst) {
    if (dst.rank() == 0) throw ShapeError("index_copy: dst is a scalar (rank 0); it has no axis to copy along");
    std::size_t const a = dst.shape().axis(axis);
    check_index_copy(src, a, ids, dst);
    if (src.numel() == 0) return;
    detail::dispatch(dst.device(), geometry(Op::index_copy, dst, a), {detail::arg(src), ids_arg(ids)},
                     {detail::arg(dst)});
}

#define RAYO_INSTANTIATE_EMBEDDING(W)                                                                   \
    template Tensor<embedding_result_t<W>> embedding<W>(Tensor<W> const&, Tensor<std::int32_t> const&); \
    template void embedding_into<W>(Tensor<W> const&, Tensor<std::int32_t> const&,                      \
                                    Tensor<embedding_result_t<W>> const&);
RAYO_INSTANTIATE_EMBEDDING(float)
RAYO_INSTANTIATE_EMBEDDING(half)
RAYO_INSTANTIATE_EMBEDDING(bfloat16)
RAYO_INSTANTIATE_EMBEDDING(q4_k)
RAYO_INSTANTIATE_EMBEDDING(q6_k)
RAYO_INSTANTIATE_EMBEDDING(q8_0)
RAYO_INSTANTIATE_EMBEDDING(q4_0)
RAYO_INSTANTIATE_EMBEDDING(q5_k)
#undef RAYO_INSTANTIATE_EMBEDDING

#define RAYO_INSTANTIATE_INDEX_SELECT(T)                                                                      \
    template Tensor<T> index_select<T>(Tensor<T> const&, int, Tensor<std::int32_t> const&);                   \
    template void index_select_into<T>(Tensor<T> const&, int, Tensor<std::int32_t> const&, Tensor<T> const&); \
    template void index_copy_into<T>(Tensor<T> const&, int, Tensor<std::int32_t> const&, Tensor<T> const&);
RAYO_INSTANTIATE_INDEX_SELECT(float)
RAYO_INSTANTIATE_INDEX_SELECT(half)
RAYO_INSTANTIATE_INDEX_SELECT(bfloat16)
RAYO_INSTANTIATE_INDEX_SELECT(std::int32_t)
#undef RAYO_INSTANTIATE_INDEX_SELECT

}  // namespace rayo
