// What the CPU backend's op files (src/cpu/ops/) run on: the kernel table of the instruction set in
// use and the thread pool that splits the work, and the host address of a view.
#pragma once

#include <cstddef>
#include <memory>

#include "cpu/kernel_table.hpp"
#include "cpu/thread_pool.hpp"
#include "dispatch/tensor_view.hpp"

namespace rayo::cpu {

class KernelRunner {
public:
    // The instruction set in use and the pool are looked up when an op runs (not when the
    // dispatcher asks whether it runs), once per op; the runner holds the pool until the op ends.
    [[nodiscard]] KernelTable const& kernels() const { return cpu::kernels(); }
    [[nodiscard]] ThreadPool& pool() const {
        if (!pool_) pool_ = thread_pool();
        return *pool_;
    }

private:
    mutable std::shared_ptr<ThreadPool> pool_;
};

// Below these sizes (elements a task) a second thread costs more than it saves.
inline constexpr std::size_t elementwise_grain = 1 << 15;
inline constexpr std::size_t reduce_grain = 1 << 16;

// A CPU view's first element: its buffer is a host address.
template <class T>
T* data(detail::TensorView const& v) noexcept {
    return reinterpret_cast<T*>(v.buffer + v.offset);
}

}  // namespace rayo::cpu
