// The diagnostics and test switches of diagnostics.hpp that read or set one device's backend.
#include "vulkan/diagnostics.hpp"

#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

namespace {

template <class Change>
void switch_path(Device device, Change change) {
    VulkanBackend& backend = backend_of(device);
    PathSwitches s = backend.switches();
    change(s);
    backend.set_switches(s);
}

}  // namespace

MemoryStats memory_stats(Device device) { return backend_of(device).memory_stats(); }

SubnormalSupport subnormal_support(Device device) { return backend_of(device).subnormal_support(); }

bool has_subgroup_arithmetic(Device device) { return backend_of(device).physical().subgroup_arithmetic; }

bool has_cooperative_matrix(Device device) {
    return backend_of(device).physical().cooperative_matrix != PhysicalDevice::CooperativeMatrix::none;
}

bool has_integer_dot_product(Device device) { return backend_of(device).physical().integer_dot_product; }

bool is_software_device(Device device) { return backend_of(device).is_software(); }

void limit_groups(Device device, std::uint32_t groups) {
    switch_path(device, [&](PathSwitches& s) { s.group_limit = groups; });
}

void use_subgroups(Device device, bool enabled) {
    switch_path(device, [&](PathSwitches& s) { s.subgroups = enabled; });
}

void use_matmul_features(Device device, bool storage16, bool cooperative_matrix) {
    switch_path(device, [&](PathSwitches& s) {
        s.storage16 = storage16;
        s.cooperative_matrix = cooperative_matrix;
    });
}

void use_element16_builds(Device device, bool enabled) {
    switch_path(device, [&](PathSwitches& s) { s.element16 = enabled; });
}

void use_decoded_kquant_gemm(Device device, bool decode_first) {
    switch_path(device, [&](PathSwitches& s) { s.decoded_kquant_gemm = decode_first; });
}

void use_integer_dot_product(Device device, std::optional<bool> enabled) {
    switch_path(device, [&](PathSwitches& s) { s.integer_dot = enabled; });
}

void set_profiling(Device device, bool on) { backend_of(device).set_profiling(on); }

std::optional<std::string> profile_table(Device device) { return backend_of(device).profile_table(); }

void use_denorm_preserve(Device device, bool enabled) {
    switch_path(device, [&](PathSwitches& s) { s.denorm_preserve = enabled; });
}

}  // namespace rayo::vulkan
