#include "cpu/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "cpu/cpu_features.hpp"
#include "cpu/gemm_driver.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/thread_pool.hpp"
#include "rayo/error.hpp"
#include "rayo/quant.hpp"
#include "rayo/settings.hpp"

namespace rayo::cpu {

using detail::ReduceOp;
using detail::TensorView;

namespace {

constexpr std::align_val_t buffer_alignment{64};
// Below these sizes a second thread costs more than it saves.
constexpr std::size_t elementwise_grain = 1 << 15;
constexpr std::size_t reduce_grain = 1 << 16;
// Element-wise outputs at least this large are written with non-temporal stores: they would
// evict everything else from the caches, and skipping the read-for-ownership saves a third of
// the memory traffic.
constexpr std::size_t streaming_bytes = std::size_t{16} << 20;

bool stream_output(std::size_t numel) noexcept { return numel * sizeof(float) >= streaming_bytes; }

template <class T>
T* ptr(TensorView const& v) noexcept {
    return reinterpret_cast<T*>(v.buffer + v.offset);
}

// Combines two partial results of one reduction; `a` covers earlier indices than `b`.
ReduceResult combine(ReduceOp op, ReduceResult a, ReduceResult b) {
    switch (op) {
        case ReduceOp::sum: return {a.value + b.value, 0};
        case ReduceOp::max: case ReduceOp::argmax:
            if (std::isnan(a.value)) return a;
            if (std::isnan(b.value)) return b;
            return b.value > a.value ? b : a;
        case ReduceOp::min: case ReduceOp::argmin:
            if (std::isnan(a.value)) return a;
            if (std::isnan(b.value)) return b;
            return b.value < a.value ? b : a;
    }
    return a;
}

}  // namespace

std::string CpuBackend::name() const {
    return cpu_features().brand + " (" + std::string(to_string(cpu_arch())) + ", " + std::to_string(num_threads()) +
           " threads)";
}

std::uintptr_t CpuBackend::allocate(std::size_t bytes) {
    try {
        return reinterpret_cast<std::uintptr_t>(::operator new(std::max<std::size_t>(bytes, 1), buffer_alignment));
    } catch (std::bad_alloc const&) {
        throw OutOfMemory("cpu: cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    }
}

void CpuBackend::release(std::uintptr_t buffer) noexcept {
    ::operator delete(reinterpret_cast<void*>(buffer), buffer_alignment);
}

void CpuBackend::upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) {
    std::memmove(reinterpret_cast<void*>(dst + offset), src, bytes);
}

void CpuBackend::download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) {
    std::memmove(dst, reinterpret_cast<void const*>(src + offset), bytes);
}

void CpuBackend::copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
                      std::size_t bytes) {
    std::memmove(reinterpret_cast<void*>(dst + dst_offset), reinterpret_cast<void const*>(src + src_offset), bytes);
}

void CpuBackend::fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
                      std::size_t pattern_bytes) {
    auto* out = reinterpret_cast<unsigned char*>(dst + offset);
    bool const all_zero = std::all_of(static_cast<unsigned char const*>(pattern),
                                      static_cast<unsigned char const*>(pattern) + pattern_bytes,
                                      [](unsigned char c) { return c == 0; });
    if (all_zero) {
        std::memset(out, 0, bytes);
        return;
    }
    for (std::size_t i = 0; i + pattern_bytes <= bytes; i += pattern_bytes) std::memcpy(out + i, pattern, pattern_bytes);
}

void CpuBackend::unary(detail::UnaryOp op, detail::UnaryParams params, TensorView const& in, TensorView const& out) {
    auto const& k = kernels();
    bool const stream = stream_output(out.numel);
    float const* x = ptr<float>(in);
    float* y = ptr<float>(out);
    thread_pool().parallel_for(in.numel, elementwise_grain,
                               [&](std::size_t b, std::size_t e) { k.unary(op, params, x + b, y + b, e - b, stream); });
}

void CpuBackend::binary(detail::BinaryOp op, TensorView const& a, TensorView const& b, TensorView const& out) {
    auto const& k = kernels();
    bool const stream = stream_output(out.numel);
    float const* x = ptr<float>(a);
    float const* z = ptr<float>(b);
    float* y = ptr<float>(out);
    thread_pool().parallel_for(a.numel, elementwise_grain,
                               [&](std::size_t s, std::size_t e) { k.binary(op, x + s, z + s, y + s, e - s, stream); });
}

void CpuBackend::binary_scalar(detail::BinaryOp op, TensorView const& a, float s, TensorView const& out) {
    auto const& k = kernels();
    bool const stream = stream_output(out.numel);
    float const* x = ptr<float>(a);
    float* y = ptr<float>(out);
    thread_pool().parallel_for(a.numel, elementwise_grain,
                               [&](std::size_t b, std::size_t e) { k.binary_scalar(op, x + b, s, y + b, e - b, stream); });
}

void CpuBackend::reduce(ReduceOp op, detail::ReduceShape shape, bool mean, TensorView const& in, TensorView const& out) {
    auto const& k = kernels();
    float const* x = ptr<float>(in);
    bool const arg = detail::is_arg_reduction(op);
    auto store = [&](std::size_t i, ReduceResult r) {
        if (arg) ptr<std::int64_t>(out)[i] = r.index;
        else ptr<float>(out)[i] = static_cast<float>(mean ? r.value / static_cast<double>(shape.extent) : r.value);
    };
    if (shape.outer == 1 && shape.inner == 1) {
        // One long run: each thread reduces a contiguous chunk, then the partials are combined in order.
        auto& pool = thread_pool();
        std::size_t const parts = std::clamp<std::size_t>(shape.extent / reduce_grain, 1, pool.size());
        std::vector<ReduceResult> partial(parts);
        pool.run_parts(parts, [&](std::size_t p, std::size_t n) {
            std::size_t const b = shape.extent * p / n, e = shape.extent * (p + 1) / n;
            partial[p] = k.reduce(op, x + b, e - b);
            partial[p].index += static_cast<std::int64_t>(b);
        });
        ReduceResult r = partial[0];
        for (std::size_t p = 1; p < parts; ++p) r = combine(op, r, partial[p]);
        store(0, r);
        return;
    }
    if (shape.inner == 1) {
        std::size_t const grain = std::max<std::size_t>(1, reduce_grain / std::max<std::size_t>(shape.extent, 1));
        thread_pool().parallel_for(shape.outer, grain, [&](std::size_t b, std::size_t e) {
            for (std::size_t o = b; o < e; ++o) store(o, k.reduce(op, x + o * shape.extent, shape.extent));
        });
        return;
    }
    // Reduction over a middle axis: column reductions of [extent, inner] blocks, split over
    // (outer x column chunks) so that few outer slices still use every thread.
    constexpr std::size_t column_chunk = 256;
    std::size_t const chunks = (shape.inner + column_chunk - 1) / column_chunk;
    std::size_t const grain = std::max<std::size_t>(1, reduce_grain / std::max<std::size_t>(shape.extent * column_chunk, 1));
    thread_pool().parallel_for(shape.outer * chunks, grain, [&](std::size_t b, std::size_t e) {
        double value[column_chunk];
        std::int64_t index[column_chunk];
        for (std::size_t t = b; t < e; ++t) {
            std::size_t const o = t / chunks, c0 = (t % chunks) * column_chunk;
            std::size_t const cols = std::min(column_chunk, shape.inner - c0);
            k.reduce_columns(op, x + o * shape.extent * shape.inner + c0, shape.extent, cols, shape.inner, value,
                             arg ? index : nullptr);
            for (std::size_t j = 0; j < cols; ++j) store(o * shape.inner + c0 + j, {value[j], arg ? index[j] : 0});
        }
    });
}

void CpuBackend::dot(TensorView const& a, TensorView const& b, TensorView const& out) {
    auto const& k = kernels();
    auto& pool = thread_pool();
    std::size_t const n = a.numel;
    std::size_t const parts = std::clamp<std::size_t>(n / reduce_grain, 1, pool.size());
    std::vector<double> partial(parts);
    pool.run_parts(parts, [&](std::size_t p, std::size_t count) {
        std::size_t const s = n * p / count, e = n * (p + 1) / count;
        partial[p] = k.dot(ptr<float>(a) + s, ptr<float>(b) + s, e - s);
    });
    double total = 0;
    for (double v : partial) total += v;
    *ptr<float>(out) = static_cast<float>(total);
}

void CpuBackend::softmax(std::size_t rows, std::size_t cols, bool log, TensorView const& in, TensorView const& out) {
    auto const& k = kernels();
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(cols, 1));
    thread_pool().parallel_for(rows, grain, [&](std::size_t b, std::size_t e) {
        k.softmax_rows(ptr<float>(in) + b * cols, ptr<float>(out) + b * cols, e - b, cols, log);
    });
}

void CpuBackend::norm(detail::NormOp op, std::size_t rows, std::size_t cols, float eps, TensorView const& in,
                      TensorView const& gamma, TensorView const& beta, TensorView const& out) {
    auto const& k = kernels();
    float const* g = gamma.numel ? ptr<float>(gamma) : nullptr;
    float const* bt = beta.numel ? ptr<float>(beta) : nullptr;
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(cols, 1));
    thread_pool().parallel_for(rows, grain, [&](std::size_t b, std::size_t e) {
        float const* x = ptr<float>(in) + b * cols;
        float* y = ptr<float>(out) + b * cols;
        if (op == detail::NormOp::layer_norm) k.layer_norm_rows(x, g, bt, eps, y, e - b, cols);
        else k.rms_norm_rows(x, g, eps, y, e - b, cols);
    });
}

void CpuBackend::matmul(detail::MatmulShape shape, TensorView const& a, TensorView const& b, TensorView const& out) {
    if (b.dtype == DType::q4_k || b.dtype == DType::q6_k) {
        linear_quantized(shape, a, b, out);
        return;
    }
    auto gemm_type = [](DType t) {
        switch (t) {
            case DType::f16: return GemmType::f16;
            case DType::bf16: return GemmType::bf16;
            case DType::f32: return GemmType::f32;
            default: throw DTypeError("cpu matmul: operand of type " + std::string(to_string(t)) + " is not f32/f16/bf16");
        }
    };
    GemmArgs args;
    args.m = shape.m;
    args.n = shape.n;
    args.k = shape.k;
    args.a = reinterpret_cast<void const*>(a.buffer + a.offset);
    args.a_type = gemm_type(a.dtype);
    args.a_row = shape.k;
    args.a_col = 1;
    args.b = reinterpret_cast<void const*>(b.buffer + b.offset);
    args.b_type = gemm_type(b.dtype);
    if (shape.b_transposed) {  // b is [n, k]: B(p, j) = b[j*k + p]
        args.b_row = 1;
        args.b_col = shape.k;
    } else {
        args.b_row = shape.n;
        args.b_col = 1;
    }
    args.c = ptr<float>(out);
    args.ldc = shape.n;
    gemm(args, kernels());
}

}  // namespace rayo::cpu
