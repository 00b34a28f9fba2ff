// What the CUDA op files need of a device: its target, addresses of tensor views, temporary
// device memory, and launching a generated kernel (generated and loaded once per key).
// CudaBackend implements it; the op files see nothing else of the runtime.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda/residency.hpp"
#include "dispatch/backend.hpp"
#include "rayo/error.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/target.hpp"
#include "rayo/ptx/tensor_map.hpp"

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

// A kernel's cache key, written into a buffer on the stack: every launch names its kernel, and a
// string built on the heap per launch would be a large share of what rayo adds to the driver's
// launch cost (docs/backends/cuda.md, "Tuning decisions").
class KernelKey {
public:
    KernelKey& operator<<(std::string_view text) {
        if (text.size() > text_.size() - size_) overflow();
        text.copy(text_.data() + size_, text.size());
        size_ += text.size();
        return *this;
    }
    template <std::unsigned_integral N>
    requires(!std::same_as<N, bool>) KernelKey& operator<<(N value) {  // in decimal
        auto const [end, error] = std::to_chars(text_.data() + size_, text_.data() + text_.size(), value);
        if (error != std::errc{}) overflow();
        size_ = static_cast<std::size_t>(end - text_.data());
        return *this;
    }
    [[nodiscard]] std::string_view view() const noexcept { return {text_.data(), size_}; }

private:
    [[noreturn]] static void overflow() {
        throw std::length_error("rayo: a CUDA kernel key longer than 192 characters");
    }
    std::array<char, 192> text_{};
    std::size_t size_ = 0;
};

// What makes a kernel the first time its key is seen: a reference to the caller's callable, valid
// for the launch call (no copy, no allocation, as std::function would make of a large capture).
class KernelFactory {
public:
    template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, KernelFactory> && std::is_invocable_r_v<ptx::Kernel, F&>)
        KernelFactory(F&& make)
    noexcept  // NOLINT(google-explicit-constructor): passed as a lambda
        : object_(const_cast<void*>(static_cast<void const*>(std::addressof(make)))),
          call_([](void* object) -> ptx::Kernel { return (*static_cast<std::remove_reference_t<F>*>(object))(); }) {}
    ptx::Kernel operator()() const { return call_(object_); }

private:
    void* object_;
    ptx::Kernel (*call_)(void*);
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
    // True when no kernel that writes the view's memory can still be running (the host has waited
    // for the device since such work was queued), so that a kernel which starts early may read it
    // before it waits for the kernel before it. False where unknown.
    [[nodiscard]] virtual bool settled(detail::TensorView const&) const noexcept { return false; }
    // The device address of the device's fault record (dispatch/device_fault.hpp), where a kernel
    // notes an index out of range; the device reads and raises it at its next host read or
    // synchronize(). Asking for it tells the device to look.
    [[nodiscard]] virtual std::uint64_t fault_record() {
        throw Unsupported("cuda: this kernel runner keeps no fault record");
    }
    // Whether encode_tensor_map works here (the driver has cuTensorMapEncodeTiled): kernels that
    // copy tiles with the TMA are chosen only then.
    [[nodiscard]] virtual bool encodes_tensor_maps() const noexcept { return false; }
    // The tensor map a TMA kernel takes as a parameter (rayo/ptx/tensor_map.hpp), encoded for this
    // device; throws Unsupported where the driver has no tensor maps (before CUDA 12).
    [[nodiscard]] virtual ptx::TensorMap encode_tensor_map(ptx::TensorMapSpec const&) {
        throw Unsupported("cuda: this kernel runner encodes no tensor maps");
    }
    // Stream-ordered device memory for intermediate results; free_temporary may be called right
    // after the launches that use it are queued.
    [[nodiscard]] virtual std::uint64_t allocate_temporary(std::size_t bytes) = 0;
    virtual void free_temporary(std::uint64_t address) noexcept = 0;
    // Queues the kernel `make` builds on the device's stream. `make` runs only the first time a
    // key is seen on this device; the key must therefore name everything the kernel depends on.
    // `arguments` point at the values of the kernel's parameters, in order.
    virtual void launch(std::string_view key, KernelFactory make, LaunchDims dims, std::span<void*> arguments) = 0;

    // launch() with the parameter values given directly (std::uint64_t addresses, std::uint32_t
    // sizes, float scalars: each exactly the type the kernel declares).
    template <class... Args>
    void run(std::string_view key, KernelFactory make, LaunchDims dims, Args... args) {
        std::array<void*, sizeof...(Args)> pointers{static_cast<void*>(&args)...};
        launch(key, make, dims, pointers);
    }

    // Temporaries seen as operands (TemporaryTensor): a view whose buffer is one of them has its
    // address as its handle, which address() resolves.
    void add_temporary_tensor(std::uint64_t address) { temporary_tensors_.push_back(address); }
    void remove_temporary_tensor(std::uint64_t address) noexcept { std::erase(temporary_tensors_, address); }
    [[nodiscard]] bool is_temporary_tensor(std::uint64_t handle) const noexcept {
        return std::ranges::find(temporary_tensors_, handle) != temporary_tensors_.end();
    }

private:
    std::vector<std::uint64_t> temporary_tensors_;
};

// Temporary device memory released (stream-ordered) when it goes out of scope.
class TemporaryBuffer {
public:
    TemporaryBuffer(KernelRunner& runner, std::size_t bytes)
        : runner_(&runner), address_(runner.allocate_temporary(bytes)) {}
    ~TemporaryBuffer() { runner_->free_temporary(address_); }
    TemporaryBuffer(TemporaryBuffer const&) = delete;
    TemporaryBuffer& operator=(TemporaryBuffer const&) = delete;
    [[nodiscard]] std::uint64_t address() const noexcept { return address_; }

private:
    KernelRunner* runner_;
    std::uint64_t address_;
};

// A TemporaryBuffer seen as an operand handle (TensorView::buffer), for an op that passes an
// intermediate between the backend's own ops.
class TemporaryTensor {
public:
    TemporaryTensor(KernelRunner& runner, std::size_t bytes) : buffer_(runner, bytes), runner_(&runner) {
        runner.add_temporary_tensor(buffer_.address());
    }
    ~TemporaryTensor() { runner_->remove_temporary_tensor(buffer_.address()); }
    TemporaryTensor(TemporaryTensor const&) = delete;
    TemporaryTensor& operator=(TemporaryTensor const&) = delete;
    [[nodiscard]] std::uintptr_t handle() const noexcept { return buffer_.address(); }

private:
    TemporaryBuffer buffer_;
    KernelRunner* runner_;
};

}  // namespace rayo::cuda
