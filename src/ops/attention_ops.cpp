// attention and attention_into: q, k, v and the mask checked and summarised as one op::Attention,
// the mask's broadcast written as the descriptor's steps. rayo tensors are contiguous, so q, k and
// v go to the backends as they are; a mask repeated along its last axis is copied out to kv_len.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "ops/floating_instantiations.hpp"
#include "ops/op_checks.hpp"
#include "rayo/detail/storage.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

constexpr char const* name = "attention";

// q, k and v of rank 4 ([batch, len, heads, head_dim]) or 3 (batch 1), k and v of one shape.
template <class T>
void check_shapes(Tensor<T> const& q, Tensor<T> const& k, Tensor<T> const& v) {
    if (q.rank() < 3 || q.rank() > 4 || k.rank() != q.rank() || v.rank() != q.rank())
        throw ShapeError(
            std::string(name) +
            ": q, k and v must all be [batch, len, heads, head_dim] or all [len, heads, head_dim], got q " +
            q.shape().to_string() + ", k " + k.shape().to_string() + ", v " + v.shape().to_string());
    if (k.shape() != v.shape())
        throw ShapeError(std::string(name) + ": k and v must have one shape, got k " + k.shape().to_string() +
                         " and v " + v.shape().to_string());
    std::size_t const r = q.rank();
    if (r == 4 && q.shape()[0] != k.shape()[0])
        throw ShapeError(std::string(name) + ": q and k have different batch sizes: q " + q.shape().to_string() +
                         ", k " + k.shape().to_string());
    if (q.shape()[r - 1] != k.shape()[r - 1])
        throw ShapeError(std::string(name) + ": q and k have different head_dim: q " + q.shape().to_string() + ", k " +
                         k.shape().to_string());
    std::int64_t const heads = q.shape()[r - 2], kv_heads = k.shape()[r - 2];
    if (kv_heads == 0 ? heads != 0 : heads % kv_heads != 0)
        throw ShapeError(std::string(name) + ": heads " + std::to_string(heads) + " is not a multiple of kv_heads " +
                         std::to_string(kv_heads) + " (q " + q.shape().to_string() + ", k " + k.shape().to_string() +
                         ")");
}

template <class T>
detail::op::Attention describe(Tensor<T> const& q, Tensor<T> const& k, AttentionParams const& params) {
    std::size_t const r = q.rank();
    auto const dim = [](Tensor<T> const& t, std::size_t i) { return static_cast<std::size_t>(t.shape()[i]); };
    detail::op::Attention a;
    a.batch = r == 4 ? dim(q, 0) : 1;
    a.q_len = dim(q, r - 3);
    a.kv_len = dim(k, r - 3);
    a.heads = dim(q, r - 2);
    a.kv_heads = dim(k, r - 2);
    a.head_dim = dim(q, r - 1);
    if (!std::isfinite(params.scale))
        throw Error(std::string(name) + ": scale must be finite, got " + std::to_string(params.scale));
    a.scale = params.scale != 0.0f ? params.scale
                                   : 1.0f / std::sqrt(static_cast<float>(std::max<std::size_t>(a.head_dim, 1)));
    a.causal = params.causal;
    auto const kv_len = static_cast<std::int64_t>(a.kv_len);
    if (params.query_offset && (*params.query_offset < 0 || *params.query_offset > kv_len))
        throw IndexError(std::string(name) + ": query_offset " + std::to_string(*params.query_offset) +
                         " is outside [0, kv_len " + std::to_string(kv_len) + "]");
    a.query_offset = params.query_offset.value_or(kv_len - static_cast<std::int64_t>(a.q_len));
    if (params.query_position) {
        Tensor<std::int32_t> const& position = *params.query_position;
        if (params.query_offset)
            throw Error(std::string(name) + ": query_offset and query_position both given; pass one");
        if (!params.causal)
            throw Error(std::string(name) + ": query_position needs causal attention (the position only hides keys)");
        if (position.numel() != 1)
            throw ShapeError(std::string(name) + ": query_position must hold one element, got shape " +
                             position.shape().to_string());
        detail::check_same_device(name, q, position);
        a.stored_position = true;
        a.query_offset = 0;
    }
    return a;
}

// The mask seen as [batch, heads, q_len, kv_len]: its steps (0 along the axes it repeats) into the
// descriptor, and the tensor the kernels read, its last axis contiguous (a copy when it repeats).
template <class T>
std::optional<FTensor> attach_mask(Tensor<T> const& q, AttentionParams const& params, detail::op::Attention& a) {
    if (!params.mask) return std::nullopt;
    FTensor mask = *params.mask;
    detail::check_same_device(name, q, mask);
    std::int64_t const want[4] = {static_cast<std::int64_t>(a.batch), static_cast<std::int64_t>(a.heads),
                                  static_cast<std::int64_t>(a.q_len), static_cast<std::int64_t>(a.kv_len)};
    Shape const target{want[0], want[1], want[2], want[3]};
    std::size_t const r = mask.rank();
    bool fits = r <= 4;
    for (std::size_t j = 0; fits && j < r; ++j) {
        std::int64_t const d = mask.shape()[r - 1 - j];
        fits = d == 1 || d == want[3 - j];
    }
    if (!fits)
        throw ShapeError(std::string(name) + ": the mask's shape " + mask.shape().to_string() +
                         " does not broadcast to [batch, heads, q_len, kv_len] " + target.to_string());
    if (r == 0 || mask.shape()[r - 1] != want[3]) {
        std::vector<std::int64_t> dims(mask.shape().dims().begin(), mask.shape().dims().end());
        if (dims.empty()) dims.push_back(1);
        dims.back() = want[3];
        mask = expand(mask, Shape(std::move(dims)));
    }
    std::size_t const mr = mask.rank();
    std::size_t steps[4] = {0, 0, 0, 1};
    std::size_t step = 1;
    for (std::size_t j = 0; j < mr; ++j) {
        std::int64_t const d = mask.shape()[mr - 1 - j];
        if (j > 0 && d != 1) steps[3 - j] = step;
        step *= static_cast<std::size_t>(d);
    }
    a.has_mask = true;
    a.mask_batch = steps[0];
    a.mask_head = steps[1];
    a.mask_row = steps[2];
    return mask;
}

template <class T>
void run_attention(Tensor<T> const& q, Tensor<T> const& k, Tensor<T> const& v, AttentionParams const& params,
                   Tensor<T> const& out) {
    check_shapes(q, k, v);
    detail::check_same_device(name, q, k);
    detail::check_same_device(name, q, v);
    detail::op::Attention a = describe(q, k, params);
    std::optional<FTensor> const mask = attach_mask(q, params, a);
    detail::check_out(name, out, q.shape(), q, false);
    detail::check_out(name, out, q.shape(), k, false);
    detail::check_out(name, out, q.shape(), v, false);
    if (mask) detail::check_out(name, out, q.shape(), *mask, false);
    if (a.stored_position) detail::check_out(name, out, q.shape(), *params.query_position, false);
    if (out.numel() == 0) return;
    if (a.kv_len == 0) {  // no key to see: every row is zeros
        std::byte const zero{0};
        detail::TensorAccess::storage(out).fill(detail::TensorAccess::offset(out), out.bytes(), &zero, 1);
        return;
    }
    detail::dispatch(q.device(), a,
                     {detail::arg(q), detail::arg(k), detail::arg(v), mask ? detail::arg(*mask) : detail::no_arg(),
                      a.stored_position ? detail::arg(*params.query_position) : detail::no_arg()},
                     {detail::arg(out)});
}

}  // namespace

template <FloatingElement T>
void attention_into(Tensor<T> const& q, Tensor<T> const& k, Tensor<T> const& v, AttentionParams const& params,
                    Tensor<T> const& out) {
    run_attention(q, k, v, params, out);
}

template <FloatingElement T>
Tensor<T> attention(Tensor<T> const& q, Tensor<T> const& k, Tensor<T> const& v, AttentionParams const& params) {
    check_shapes(q, k, v);
    Tensor<T> out = Tensor<T>::empty(q.shape(), q.device());
    run_attention(q, k, v, params, out);
    return out;
}

#define RAYO_INSTANTIATE_ATTENTION(T)                                                                           \
    template Tensor<T> attention(Tensor<T> const&, Tensor<T> const&, Tensor<T> const&, AttentionParams const&); \
    template void attention_into(Tensor<T> const&, Tensor<T> const&, Tensor<T> const&, AttentionParams const&,  \
                                 Tensor<T> const&);
RAYO_EACH_FLOATING(RAYO_INSTANTIATE_ATTENTION)
#undef RAYO_INSTANTIATE_ATTENTION

}  // namespace rayo
