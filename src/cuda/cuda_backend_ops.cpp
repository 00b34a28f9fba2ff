// The CUDA backend's ops: each takes the device's lock, makes its context current and hands a
// KernelRunner to the op family's file in cuda/ops/, which generates, caches and launches the kernels.
#include <string>
#include <variant>

#include "cuda/cuda_backend.hpp"
#include "core/logging.hpp"
#include "cuda/kernel_runner.hpp"
#include "cuda/tensor_map.hpp"
#include "cuda/ops/ops.hpp"
#include "rayo/dtype.hpp"
#include "rayo/ptx/target.hpp"

namespace rayo::cuda {

using detail::TensorView;

// Lives for one op, with the backend's mutex held and its context current.
class CudaBackend::Runner final : public KernelRunner {
public:
    // tracked: the op's writes are marked by the caller (CudaBackend's op methods), so settled()
    // may answer; with_runner's body may write anything, so there it says false.
    Runner(CudaBackend& backend, bool tracked) : backend_(backend), tracked_(tracked) {}

    [[nodiscard]] ptx::Target target() const noexcept override {
        return ptx::target_for_compute_capability(backend_.compute_capability());
    }
    [[nodiscard]] int multiprocessor_count() const noexcept override { return backend_.multiprocessor_count(); }
    [[nodiscard]] unsigned max_shared_bytes() const noexcept override { return backend_.max_shared_bytes(); }
    [[nodiscard]] MultiprocessorSharedMemory multiprocessor_shared() const noexcept override {
        return backend_.multiprocessor_shared();
    }
    [[nodiscard]] std::uint64_t address(TensorView const& view) override {
        if (is_temporary_tensor(view.buffer)) return view.buffer + view.offset;
        return backend_.address(view.buffer, view.offset, view.span_bytes(), "kernel operand");
    }
    [[nodiscard]] bool settled(TensorView const& view) const noexcept override {
        return tracked_ && backend_.settled(view.buffer);
    }
    [[nodiscard]] std::uint64_t fault_record() override { return backend_.fault_record(); }
    [[nodiscard]] bool encodes_tensor_maps() const noexcept override {
        return backend_.context_.driver().cuTensorMapEncodeTiled != nullptr;
    }
    [[nodiscard]] ptx::TensorMap encode_tensor_map(ptx::TensorMapSpec const& spec) override {
        return cuda::encode_tensor_map(backend_.context_, spec);
    }
    [[nodiscard]] std::uint64_t allocate_temporary(std::size_t bytes) override {
        return backend_.memory_.allocate(bytes);
    }
    void free_temporary(std::uint64_t address) noexcept override {
        try {
            backend_.memory_.free(address);  // stream-ordered: after the kernels queued so far
        } catch (std::exception const& e) {  // a failed context: its memory goes with it
            detail::log(LogLevel::error, "rayo: " + backend_.label() + ": freeing a temporary: " + e.what());
        }
    }
    void launch(std::string_view key, KernelFactory make, LaunchDims dims, std::span<void*> arguments) override {
        // On sm_90 every kernel waits for the previous grid first thing and is launched to start
        // early (programmatic stream serialization): the driver queues such a launch in less host
        // time than a plain one (docs/backends/cuda.md, "Tuning decisions"), and a kernel that
        // triggers its dependents early (the spanning GEMV) has the next one start while it runs.
        ptx::Target const t = target();
        bool const early = ptx::compute_capability(t) >= 90;
        // The hot path of every op: one map lookup once the kernel is loaded.
        auto it = backend_.kernels_.find(key);
        if (it == backend_.kernels_.end()) {
            ptx::Kernel kernel = make();
            if (early) kernel.griddepcontrol_wait_at_entry();
            std::string const text = kernel.emit(ptx::emission_target(kernel, t));
            CUfunction const f = backend_.modules_.function(std::string(key) + "@" + std::string(ptx::to_string(t)),
                                                            kernel.name(), [&] { return text; });
            it = backend_.kernels_.emplace(std::string(key), f).first;
        }
        // RAYO_CUDA_PROFILE: events around the launch, unless it is recorded into a graph.
        KernelProfile* const profile =
            backend_.profiling_ && !backend_.capture_thread_ ? backend_.profile_.get() : nullptr;
        CUevent const start = profile ? profile->begin() : nullptr;
        backend_.modules_.launch(it->second, {dims.grid[0], dims.grid[1], dims.grid[2]},
                                 {dims.block[0], dims.block[1], dims.block[2]}, dims.shared_bytes, arguments,
                                 early || dims.starts_early);
        if (profile) profile->end(key, start);
    }

private:
    CudaBackend& backend_;
    bool tracked_;
};

template <class Body>
void CudaBackend::run_op(std::span<TensorView const> outputs, bool tracked, Body&& body) {
    std::lock_guard lock(mutex_);
    refuse_while_captured("an op");
    ScopedCurrent const current(context_);
    // First: kernels an op queues before it throws count as well.
    for (TensorView const& out : outputs) mark_written(out.buffer);
    Runner runner(*this, tracked);
    body(runner);
}

void CudaBackend::with_runner(std::function<void(KernelRunner&)> const& body) {
    run_op({}, false, [&](Runner& r) { body(r); });
}

void CudaBackend::launch_user_kernel(std::string_view key, ptx::Kernel const& kernel, LaunchDims dims,
                                     std::span<KernelArgument const> arguments) {
    std::vector<TensorView> tensors;
    for (KernelArgument const& a : arguments)
        if (a.kind() == KernelArgument::Kind::tensor) {
            TensorView v{};
            v.buffer = a.storage().handle();
            v.offset = a.offset();
            v.dtype = a.dtype();
            v.present = true;
            v.rank = 1;
            v.shape[0] = static_cast<std::int64_t>(a.bytes() / size_of(a.dtype()) * block_elements(a.dtype()));
            v.strides[0] = 1;
            tensors.push_back(v);
        }
    run_op(tensors, false, [&](Runner& r) {
        std::vector<std::uint64_t> values(arguments.size());
        std::vector<void*> pointers(arguments.size());
        std::size_t next_tensor = 0;
        for (std::size_t i = 0; i < arguments.size(); ++i) {
            KernelArgument const& a = arguments.begin()[i];
            values[i] = a.kind() == KernelArgument::Kind::tensor ? r.address(tensors[next_tensor++]) : a.bits();
            pointers[i] = &values[i];  // little-endian: a 32-bit value is the low bytes
        }
        r.launch(
            key, [&] { return kernel; }, dims, pointers);
    });
}

detail::Support CudaBackend::supports(detail::OpDescriptor const& op, detail::OpViews const& views) const {
    Runner const runner(const_cast<CudaBackend&>(*this), false);  // reads the device's properties only
    return std::visit([&](auto const& d) { return ops::supports(runner, d, views); }, op);
}

void CudaBackend::run(detail::OpDescriptor const& op, detail::OpViews const& views) {
    run_op(views.out, true, [&](Runner& r) { std::visit([&](auto const& d) { ops::run(r, d, views); }, op); });
}

}  // namespace rayo::cuda
