#include <stdexcept>

#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

Support supports(ShaderRunner const&, op::Pool2d const&, OpViews const&) { return Support::no("vulkan: not written yet"); }
void run(ShaderRunner&, op::Pool2d const&, OpViews const&) { throw std::logic_error("unreachable"); }

}  // namespace rayo::vulkan::ops
