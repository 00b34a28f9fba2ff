// launch_cuda_kernel (rayo/cuda_kernel.hpp): a kernel of the caller's, checked against its
// arguments and the device, then queued through the backend like rayo's own.
#include <functional>
#include <string>

#include "core/capture_guard.hpp"
#include "core/device_registry.hpp"
#include "cuda/cuda_backend.hpp"
#include "rayo/cuda_kernel.hpp"
#include "rayo/error.hpp"

namespace rayo {

namespace {

using Kind = KernelArgument::Kind;

bool fits(Kind kind, ptx::Type t) {
    using ptx::Type;
    switch (kind) {
        case Kind::tensor: return t == Type::u64 || t == Type::b64 || t == Type::s64;
        case Kind::f32: return t == Type::f32;
        case Kind::s32: return t == Type::s32 || t == Type::b32;
        case Kind::u32: return t == Type::u32 || t == Type::b32;
        case Kind::s64: return t == Type::s64 || t == Type::b64;
        case Kind::u64: return t == Type::u64 || t == Type::b64;
    }
    return false;
}

std::string name_of(Kind kind) {
    switch (kind) {
        case Kind::tensor: return "a tensor";
        case Kind::f32: return "a float";
        case Kind::s32: return "a std::int32_t";
        case Kind::u32: return "a std::uint32_t";
        case Kind::s64: return "a std::int64_t";
        case Kind::u64: return "a std::uint64_t";
    }
    return "?";
}

void check_arguments(std::string const& what, Device device, std::vector<ptx::Kernel::Parameter> const& parameters,
                     std::initializer_list<KernelArgument> arguments) {
    auto const listed = [&] {
        std::string text;
        for (auto const& p : parameters)
            text += (text.empty() ? "" : ", ") + std::string(".") + std::string(ptx::name_of(p.type)) + " " + p.name;
        return text;
    };
    if (arguments.size() != parameters.size())
        throw Error(what + ": " + std::to_string(arguments.size()) + " arguments for its " +
                    std::to_string(parameters.size()) + " parameters (" + listed() + ")");
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        KernelArgument const& a = arguments.begin()[i];
        ptx::Kernel::Parameter const& p = parameters[i];
        std::string const which = what + ": argument " + std::to_string(i) + " (" + p.name + ")";
        if (p.bytes != static_cast<std::size_t>(ptx::bytes_of(p.type)))
            throw Error(which + " is an array parameter (a tensor map), which launch_cuda_kernel does not pass");
        if (!fits(a.kind(), p.type))
            throw Error(which + " is " + name_of(a.kind()) + ", the parameter is ." +
                        std::string(ptx::name_of(p.type)));
        if (a.kind() == Kind::tensor && a.storage().device() != device)
            throw Error(which + " is a tensor on " + a.storage().device().id());
    }
}

void check_shape(std::string const& what, LaunchShape const& s, unsigned max_shared_bytes) {
    char const axes[] = {'x', 'y', 'z'};
    std::uint64_t threads = 1;
    for (int i = 0; i < 3; ++i) {
        if (s.grid[i] == 0 || s.block[i] == 0)
            throw Error(what + ": the " + (s.grid[i] == 0 ? "grid" : "block") + "'s " + axes[i] + " is 0");
        threads *= s.block[i];
    }
    if (threads > 1024) throw Error(what + ": a block of " + std::to_string(threads) + " threads (at most 1024)");
    if (s.block[2] > 64) throw Error(what + ": the block's z is " + std::to_string(s.block[2]) + " (at most 64)");
    for (int i = 1; i < 3; ++i)
        if (s.grid[i] > 65535)
            throw Error(what + ": the grid's " + axes[i] + " is " + std::to_string(s.grid[i]) + " (at most 65535)");
    if (s.grid[0] > 0x7fffffffu)
        throw Error(what + ": the grid's x is " + std::to_string(s.grid[0]) + " (at most 2^31 - 1)");
    if (s.shared_bytes > max_shared_bytes)
        throw Error(what + ": " + std::to_string(s.shared_bytes) + " bytes of shared memory (the device allows " +
                    std::to_string(max_shared_bytes) + " a block)");
}

}  // namespace

void launch_cuda_kernel(Device device, ptx::Kernel const& kernel, LaunchShape shape,
                        std::initializer_list<KernelArgument> arguments) {
    std::string const what = "launch_cuda_kernel: kernel " + kernel.name() + " on " + device.id();
    if (device.kind() != DeviceKind::cuda) throw Error(what + ": not a CUDA device");
    if (detail::capturing_device()) detail::refuse_in_capture(what);  // a graph replays rayo's ops only
    auto& backend = dynamic_cast<cuda::CudaBackend&>(detail::DeviceRegistry::instance().backend(device));
    check_arguments(what, device, kernel.parameters(), arguments);
    check_shape(what, shape, backend.max_shared_bytes());
    // Kernels are cached by their text: a kernel rebuilt with other instructions is another kernel.
    ptx::Target const target = ptx::target_for_compute_capability(backend.compute_capability());
    std::string const text = kernel.emit(ptx::emission_target(kernel, target));
    cuda::KernelKey key;
    key << "user/" << std::string_view(kernel.name()).substr(0, 120) << "/"
        << static_cast<std::uint64_t>(std::hash<std::string>{}(text));
    backend.launch_user_kernel(key.view(), kernel, {shape.grid, shape.block, shape.shared_bytes, false},
                               {arguments.begin(), arguments.size()});
}

}  // namespace rayo
