// What the CUDA op files need of a device: its target, addresses of tensor views, temporary
// device memory, and launching a generated kernel (generated and loaded once per key).
// CudaBackend implements it; the op files see nothing else of the runtime.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "cuda/residency.hpp"
#include "dispatch/backend.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/target.hpp"

namespace rayo::cuda {

struct LaunchDims {
    std::array<unsigned, 3> grid{1, 1, 1};
    std::array<unsigned, 3> block{1, 1, 1};
    unsigned shared_bytes = 0;  // dynamic shared memory
    // The kernel issues griddepcontrol.wait before touching memory (ptx::Kernel, sm_90): it is
    // launched with programmatic stream serialization, so it may start, and prefetch, while the
    // kernel before it finishes. (On sm_90 the runner launches every kernel so, putting the wait
    // first in those that have none; this says the kernel's own placement of it matters.)
    bool starts_early = false;
};

class KernelRunner {
public:
    virtual ~KernelRunner() = default;

    [[nodiscard]] virtual ptx::Target target() const noexcept = 0;
    [[nodiscard]] virtual int multiprocessor_count() const noexcept = 0;
    // The dynamic shared memory one block may use (opted in at launch); 48 KiB is every device's.
    [[nodiscard]] virtual unsigned max_shared_bytes() const noexcept { return 48 * 1024; }
    // What a multiprocessor's blocks share of shared memory (residency.hpp); zeros where unknown.
    [[nodiscard]] virtual MultiprocessorSharedMemory multiprocessor_shared() const noexcept { return {}; }
    // The device address of a view's first byte.
    [[nodiscard]] virtual std::uint64_t address(detail::TensorView const& view) = 0;
    // Stream-ordered device memory for intermediate results; free_temporary may be called right
    // after the launches that use it are queued.
    [[nodiscard]] virtual std::uint64_t allocate_temporary(std::size_t bytes) = 0;
    virtual void free_temporary(std::uint64_t address) noexcept = 0;
    // Queues the kernel `make` builds on the device's stream. `make` runs only the first time a
    // key is seen on this device; the key must therefore name everything the kernel depends on.
    // `arguments` point at the values of the kernel's parameters, in order.
    virtual void launch(std::string const& key, std::function<ptx::Kernel()> const& make, LaunchDims dims,
                        std::span<void*> arguments) = 0;

    // launch() with the parameter values given directly (std::uint64_t addresses, std::uint32_t
    // sizes, float scalars: each exactly the type the kernel declares).
    template <class... Args>
    void run(std::string const& key, std::function<ptx::Kernel()> const& make, LaunchDims dims, Args... args) {
        std::array<void*, sizeof...(Args)> pointers{static_cast<void*>(&args)...};
        launch(key, make, dims, pointers);
    }
};

// Temporary device memory released (stream-ordered) when it goes out of scope.
class TemporaryBuffer {
public:
    TemporaryBuffer(KernelRunner& runner, std::size_t bytes) : runner_(&runner), address_(runner.allocate_temporary(bytes)) {}
    ~TemporaryBuffer() { runner_->free_temporary(address_); }
    TemporaryBuffer(TemporaryBuffer const&) = delete;
    TemporaryBuffer& operator=(TemporaryBuffer const&) = delete;
    [[nodiscard]] std::uint64_t address() const noexcept { return address_; }

private:
    KernelRunner* runner_;
    std::uint64_t address_;
};

}  // namespace rayo::cuda
