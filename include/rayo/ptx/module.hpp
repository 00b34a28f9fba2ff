// A PTX module: the ISA version and target chosen together, and the kernels it holds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/target.hpp"

namespace rayo::ptx {

class RAYO_API Module {
public:
    // Throws BuildError when `isa` is older than the target needs (sm_90a needs PTX 8.0).
    explicit Module(Target target, std::optional<IsaVersion> isa = std::nullopt);

    [[nodiscard]] Target target() const noexcept { return target_; }
    [[nodiscard]] IsaVersion isa() const noexcept { return isa_; }
    // Kernel names must be unique within a module.
    Module& add(Kernel kernel);
    [[nodiscard]] std::vector<Kernel> const& kernels() const noexcept { return kernels_; }
    // The module's PTX text; every kernel is verified first.
    [[nodiscard]] std::string emit() const;

private:
    Target target_;
    IsaVersion isa_;
    std::vector<Kernel> kernels_;
};

}  // namespace rayo::ptx
