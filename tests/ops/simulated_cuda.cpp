#include "ops/simulated_cuda.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <variant>

#include "cuda/ops/ops.hpp"
#include "dispatch/device_fault.hpp"
#include "dispatch/memory_counter.hpp"
#include "core/device_registry.hpp"
#include "rayo/error.hpp"
#include "support/ptx_simulator.hpp"

namespace rayo::test::ops {

namespace {

constexpr int simulated_index = 99;
constexpr std::align_val_t alignment{256};
// An H100's or H200's multiprocessor: 228 KiB of shared memory, 1 KiB reserved a block.
constexpr cuda::MultiprocessorSharedMemory hopper_multiprocessor{.bytes = 233472, .reserved_per_block = 1024};

class SimulatedCudaBackend final : public detail::Backend {
public:
    ~SimulatedCudaBackend() override {
        for (auto const& [address, bytes] : allocations_)
            ::operator delete(reinterpret_cast<void*>(address), alignment);
    }
    [[nodiscard]] DeviceKind kind() const noexcept override { return DeviceKind::cuda; }
    [[nodiscard]] int index() const noexcept override { return simulated_index; }
    [[nodiscard]] std::string name() const override { return "simulated sm_90 (the PTX simulator of the tests)"; }
    [[nodiscard]] bool is_software() const noexcept override { return true; }

    [[nodiscard]] std::uintptr_t allocate(std::size_t bytes) override {
        auto const address =
            reinterpret_cast<std::uintptr_t>(::operator new(std::max<std::size_t>(bytes, 1), alignment));
        allocations_[address] = bytes;
        memory_.reserved.add(bytes);
        memory_.in_use.add(bytes);
        return address;
    }
    void release(std::uintptr_t buffer) noexcept override {
        if (auto const it = allocations_.find(buffer); it != allocations_.end()) {
            memory_.in_use.subtract(it->second);
            memory_.reserved.subtract(it->second);
            allocations_.erase(it);
        }
        ::operator delete(reinterpret_cast<void*>(buffer), alignment);
    }
    void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) override {
        std::memmove(reinterpret_cast<void*>(dst + offset), src, bytes);
    }
    void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) override {
        std::memmove(dst, reinterpret_cast<void const*>(src + offset), bytes);
        raise_recorded_fault();
    }
    void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
              std::size_t bytes) override {
        std::memmove(reinterpret_cast<void*>(dst + dst_offset), reinterpret_cast<void const*>(src + src_offset), bytes);
    }
    void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
              std::size_t pattern_bytes) override {
        auto* out = reinterpret_cast<unsigned char*>(dst + offset);
        for (std::size_t i = 0; i + pattern_bytes <= bytes; i += pattern_bytes)
            std::memcpy(out + i, pattern, pattern_bytes);
    }
    void synchronize() override { raise_recorded_fault(); }
    // Tensors only: each run()'s SimulatedRunner holds the temporaries of its op.
    [[nodiscard]] MemoryUsage memory_usage() const override { return memory_.usage(); }
    void reset_peak_memory() override { memory_.reset_peaks(); }

    [[nodiscard]] detail::Support supports(detail::OpDescriptor const& op,
                                           detail::OpViews const& views) const override {
        ptxsim::SimulatedRunner runner(multiprocessors, ptx::Target::sm_90);
        configure(runner);
        return std::visit([&](auto const& d) { return cuda::ops::supports(runner, d, views); }, op);
    }
    void run(detail::OpDescriptor const& op, detail::OpViews const& views) override {
        ptxsim::SimulatedRunner runner(multiprocessors, ptx::Target::sm_90);
        configure(runner);
        for (auto const& [address, bytes] : allocations_) runner.allow(reinterpret_cast<void const*>(address), bytes);
        try {
            std::visit([&](auto const& d) { cuda::ops::run(runner, d, views); }, op);
        } catch (ptxsim::SimulationError const& e) {
            if (std::string(e.what()).find("not simulated") != std::string::npos) throw NotSimulated(e.what());
            throw;
        }
    }

private:
    static constexpr int multiprocessors = 2;
    void configure(ptxsim::SimulatedRunner& runner) const {
        runner.set_max_shared_bytes(227 * 1024);
        runner.set_multiprocessor_shared(hopper_multiprocessor);
        runner.set_fault_record(&fault_);
    }
    // As the CUDA backend: a fault a kernel recorded is raised at the next host read.
    void raise_recorded_fault() {
        if (!detail::raised(fault_)) return;
        detail::DeviceFaultRecord const record = fault_;
        fault_ = {};
        throw detail::device_fault_error(record, "cuda:" + std::to_string(simulated_index));
    }

    std::map<std::uintptr_t, std::size_t> allocations_;
    detail::MemoryCounters memory_;
    mutable detail::DeviceFaultRecord fault_{};
};

detail::Backend* registered = nullptr;

}  // namespace

Device register_simulated_cuda() {
    if (!registered) {
        auto backend = std::make_unique<SimulatedCudaBackend>();
        registered = backend.get();
        detail::DeviceRegistry::instance().add(std::move(backend));
    }
    return detail::make_device(DeviceKind::cuda, simulated_index);
}

void unregister_simulated_cuda() {
    if (!registered) return;
    detail::DeviceRegistry::instance().remove(registered);
    registered = nullptr;
}

}  // namespace rayo::test::ops
