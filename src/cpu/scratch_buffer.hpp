// 64-byte aligned f32 scratch of one thread (a thread_local of the CPU kernels' drivers) that grows
// on demand and is kept between calls, so that no call pays for an allocation or its page faults.
// Its bytes count as reserved host memory (cpu/host_memory.hpp).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#include "cpu/host_memory.hpp"

namespace rayo::cpu {

class ScratchBuffer {
public:
    ScratchBuffer() = default;
    ScratchBuffer(ScratchBuffer const&) = delete;
    ScratchBuffer& operator=(ScratchBuffer const&) = delete;
    ~ScratchBuffer() { release(); }

    // At least `floats` values; the slack past the end lets packers finish a panel with whole-vector
    // stores.
    float* get(std::size_t floats) {
        std::size_t const bytes = ((floats + 64) * sizeof(float) + 4095) / 4096 * 4096;
        if (bytes > capacity_) {
            release();
            data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
            if (data_ == nullptr) throw std::bad_alloc();
            capacity_ = bytes;
            host_memory().reserved.add(capacity_);
        }
        return data_;
    }

private:
    void release() noexcept {
        std::free(data_);
        data_ = nullptr;
        host_memory().reserved.subtract(capacity_);
        capacity_ = 0;
    }

    float* data_ = nullptr;
    std::size_t capacity_ = 0;
};

}  // namespace rayo::cpu
