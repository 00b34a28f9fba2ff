#include <stdexcept>

#include "cuda/ops/ops.hpp"

namespace rayo::cuda::ops {

Support supports(KernelRunner const&, op::Attention const&, OpViews const&) { return Support::no("cuda: not written yet"); }
void run(KernelRunner&, op::Attention const&, OpViews const&) { throw std::logic_error("unreachable"); }

}  // namespace rayo::cuda::ops
