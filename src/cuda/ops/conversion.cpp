// cast on CUDA: the generated rayo_cast_<from>_<to> kernel (rayo/ptx/kernels/conversion.hpp), one
// element per thread.
#include <cstdint>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/conversion.hpp"

namespace rayo::cuda::ops {

Support supports(KernelRunner const&, op::Cast const&, OpViews const& v) {
    if (!detail::castable(v.in[0].dtype) || !detail::castable(v.out[0].dtype))
        return Support::no("cuda: cast takes f32, f16, bf16 and i32");
    if (!v.in[0].is_contiguous() || !v.out[0].is_contiguous())
        return Support::no("cuda: cast takes contiguous tensors");
    return Support::yes();
}

void run(KernelRunner& runner, op::Cast const&, OpViews const& v) {
    std::size_t const n = v.out[0].numel();
    if (n == 0) return;
    std::uint64_t const out = runner.address(v.out[0]), in = runner.address(v.in[0]);
    // Groups of 4 elements where both start on a multiple of 4 elements.
    bool const vectorized =
        out % (4 * bytes_for(v.out[0].dtype, 1)) == 0 && in % (4 * bytes_for(v.in[0].dtype, 1)) == 0;
    ptx::kernels::CastKernelConfig const config{.from = v.in[0].dtype,
                                                .to = v.out[0].dtype,
                                                .vectorized = vectorized,
                                                .block_threads = elementwise_block_threads};
    KernelKey key;
    key << "cast/" << to_string(config.from) << "/" << to_string(config.to) << (vectorized ? "/v4" : "/scalar") << "/b"
        << config.block_threads << "/" << ptx::to_string(runner.target());
    runner.run(
        key.view(), [config] { return ptx::kernels::cast(config); }, elementwise_launch(n, vectorized), out, in,
        std::uint64_t{n});
}

}  // namespace rayo::cuda::ops
