// cast: values from one element type to another, on the tensor's device.
#include <concepts>
#include <cstdint>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

template <CastElement To, CastElement From>
void cast_into(Tensor<From> const& x, Tensor<To> const& out) {
    detail::check_out("cast", out, x.shape(), x, std::same_as<To, From>);
    detail::dispatch(x.device(), detail::op::Cast{}, {detail::arg(x)}, {detail::arg(out)});
}

template <CastElement To, CastElement From>
Tensor<To> cast(Tensor<From> const& x) {
    Tensor<To> out = Tensor<To>::empty(x.shape(), x.device());
    cast_into(x, out);
    return out;
}

#define RAYO_INSTANTIATE_CAST(TO, FROM)                      \
    template Tensor<TO> cast<TO, FROM>(Tensor<FROM> const&); \
    template void cast_into<TO, FROM>(Tensor<FROM> const&, Tensor<TO> const&);
#define RAYO_INSTANTIATE_CASTS_FROM(FROM) \
    RAYO_INSTANTIATE_CAST(float, FROM)    \
    RAYO_INSTANTIATE_CAST(half, FROM)     \
    RAYO_INSTANTIATE_CAST(bfloat16, FROM) \
    RAYO_INSTANTIATE_CAST(std::int32_t, FROM)
RAYO_INSTANTIATE_CASTS_FROM(float)
RAYO_INSTANTIATE_CASTS_FROM(half)
RAYO_INSTANTIATE_CASTS_FROM(bfloat16)
RAYO_INSTANTIATE_CASTS_FROM(std::int32_t)
#undef RAYO_INSTANTIATE_CASTS_FROM
#undef RAYO_INSTANTIATE_CAST

}  // namespace rayo
