#include <stdexcept>

#include "cpu/ops/ops.hpp"

namespace rayo::cpu::ops {

Support supports(KernelRunner const&, op::Rope const&, OpViews const&) { return Support::no("cpu: not written yet"); }
void run(KernelRunner&, op::Rope const&, OpViews const&) { throw std::logic_error("unreachable"); }

}  // namespace rayo::cpu::ops
