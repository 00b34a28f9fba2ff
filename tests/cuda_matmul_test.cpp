// matmul and linear on a CUDA device against a float64 reference: through the public API (which
// must not fall back to the CPU), and through the op glue directly for every operand-type pair,
// both b layouts and misaligned views, so that every GEMM variant the glue can choose runs.
//
// Stated accuracy, as |got − want| ≤ tol · Σ_p |a(i, p) · b(p, j)| for every output:
//   f32 × f32 (CUDA cores, f32 FMA):                         tol = 1e-5 · √k (the CPU backend's)
//   f16 × f16, bf16 × bf16 (tensor cores, exact products,
//     f32 accumulation):                                     tol = 5e-5 · √k
//   f32 × f16 / bf16 (a rounded to b's type on the way):     tol = 5e-5 · √k + 2^-11 (f16) or 2^-8 (bf16)
// The reference multiplies the values as stored: f16/bf16 decoded exactly, the f32 a of a mixed
// product unrounded (so the rounding of a is part of the measured error).
#include "support/cuda_support.hpp"

#include <rayo/ptx/kernels/gemm.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda/kernel_runner.hpp"
#include "cuda/ops/matmul_ops.hpp"

namespace rayo::test {
namespace {

struct Dims {
    std::size_t m, n, k;
};

std::string dims_name(Dims d) { return std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k); }

// The shapes the issue names: tiny, odd, one-row and one-column, and one large square.
std::vector<Dims> named_shapes() {
    return {{1, 1, 1},    {7, 5, 3},     {33, 65, 17},   {128, 128, 128},
            {257, 129, 300}, {1000, 1, 512}, {1, 1000, 512}, {4096, 4096, 64}};
}

double tolerance(DType a, DType b, std::size_t k) {
    double const root_k = std::sqrt(static_cast<double>(std::max<std::size_t>(k, 1)));
    if (a == DType::f32 && b == DType::f32) return 1e-5 * root_k;
    double tol = 5e-5 * root_k;
    if (a == DType::f32) tol += b == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    return tol;
}

// The values of a tensor's elements as the device sees them.
struct Operand {
    DType dtype = DType::f32;
    std::vector<float> f32;
    std::vector<half> f16;
    std::vector<bfloat16> bf16;
    std::vector<double> exact;  // float64 of the stored values

    Operand(DType type, std::vector<float> const& values) : dtype(type) {
        switch (type) {
            case DType::f32: f32 = values; break;
            case DType::f16: f16.assign(values.begin(), values.end()); break;
            default: bf16.assign(values.begin(), values.end()); break;
        }
        for (std::size_t i = 0; i < values.size(); ++i) exact.push_back(value(i));
    }
    [[nodiscard]] double value(std::size_t i) const {
        switch (dtype) {
            case DType::f32: return f32[i];
            case DType::f16: return static_cast<float>(f16[i]);
            default: return static_cast<float>(bf16[i]);
        }
    }
    [[nodiscard]] void const* bytes() const {
        switch (dtype) {
            case DType::f32: return f32.data();
            case DType::f16: return f16.data();
            default: return bf16.data();
        }
    }
    [[nodiscard]] std::size_t element_bytes() const { return dtype == DType::f32 ? 4 : 2; }
    [[nodiscard]] std::size_t size() const { return exact.size(); }
};

// want[i, j] = Σ_p a(i, p) · b(p, j) and Σ_p |a(i, p) · b(p, j)|, in float64, rows over threads.
struct Reference {
    std::vector<double> want, magnitude;
};
Reference reference(std::vector<double> const& a, std::vector<double> const& b, Dims d, bool b_transposed) {
    std::vector<double> bt(d.n * d.k);  // b as [n, k]
    for (std::size_t j = 0; j < d.n; ++j)
        for (std::size_t p = 0; p < d.k; ++p) bt[j * d.k + p] = b_transposed ? b[j * d.k + p] : b[p * d.n + j];
    Reference r{std::vector<double>(d.m * d.n), std::vector<double>(d.m * d.n)};
    auto rows = [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i)
            for (std::size_t j = 0; j < d.n; ++j) {
                double sum = 0, mag = 0;
                double const* ai = a.data() + i * d.k;
                double const* bj = bt.data() + j * d.k;
                for (std::size_t p = 0; p < d.k; ++p) {
                    sum += ai[p] * bj[p];
                    mag += std::abs(ai[p] * bj[p]);
                }
                r.want[i * d.n + j] = sum;
                r.magnitude[i * d.n + j] = mag;
            }
    };
    std::size_t const workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 32);
    std::vector<std::thread> pool;
    for (std::size_t w = 0; w < workers; ++w)
        pool.emplace_back(rows, d.m * w / workers, d.m * (w + 1) / workers);
    for (auto& t : pool) t.join();
    return r;
}

void expect_close(std::vector<float> const& got, Reference const& ref, Dims d, double tol, std::string const& what) {
    ASSERT_EQ(got.size(), d.m * d.n) << what;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double const err = std::abs(static_cast<double>(got[i]) - ref.want[i]);
        double const bound = tol * ref.magnitude[i] + 1e-30;
        if (!(err <= bound) && bad++ < 5)
            ADD_FAILURE() << what << " " << dims_name(d) << ": out(" << i / d.n << ", " << i % d.n << ") = " << got[i]
                          << ", want " << ref.want[i] << " (error " << err << " > " << bound << ")";
    }
    EXPECT_EQ(bad, 0u) << what << " " << dims_name(d) << ": " << bad << " of " << got.size() << " outputs outside "
                       << tol << "·Σ|a·b|";
}

// ---- the public API

class CudaMatmul : public CudaTest {
protected:
    void SetUp() override {
        CudaTest::SetUp();
        if (!IsSkipped()) reset_stats();
    }
    void TearDown() override {
        if (!IsSkipped()) {
            EXPECT_EQ(rayo::stats().cpu_fallbacks, 0u) << "matmul / linear ran on the CPU";
        }
        CudaTest::TearDown();
    }
};

// matmul(a, b) with a and b of T ([k, n] b), both forms; linear(x, w) with f32 x and T w ([n, k]).
template <class T>
void run_public_case(Device device, Dims d) {
    DType const type = dtype_of<T>;
    auto const seed = fresh_seed();
    SCOPED_TRACE(dims_name(d) + " " + std::string(to_string(type)) + " seed " + std::to_string(seed));
    Operand const a(type, random_floats(d.m * d.k, seed, -1.0f, 1.0f));
    Operand const b(type, random_floats(d.k * d.n, seed + 1, -1.0f, 1.0f));
    auto to_device = [&](Operand const& o, Shape shape) {
        if constexpr (std::is_same_v<T, float>) return Tensor<T>::from(o.f32, std::move(shape), device);
        else if constexpr (std::is_same_v<T, half>) return Tensor<T>::from(o.f16, std::move(shape), device);
        else return Tensor<T>::from(o.bf16, std::move(shape), device);
    };
    auto const ta = to_device(a, {d.m, d.k}), tb = to_device(b, {d.k, d.n});
    Reference const mm = reference(a.exact, b.exact, d, false);
    double const tol = tolerance(type, type, d.k);
    expect_close(matmul(ta, tb).to_vector(), mm, d, tol, "matmul");
    auto out = poisoned({d.m, d.n}, device);
    matmul(ta, tb, out);
    expect_close(out.to_vector(), mm, d, tol, "matmul(out)");

    Operand const x(DType::f32, random_floats(d.m * d.k, seed + 2, -1.0f, 1.0f));
    Operand const w(type, random_floats(d.n * d.k, seed + 3, -1.0f, 1.0f));
    Reference const lin = reference(x.exact, w.exact, d, true);
    auto const tx = Tensor<float>::from(x.f32, {d.m, d.k}, device);
    auto const tw = to_device(w, {d.n, d.k});
    auto lin_out = poisoned({d.m, d.n}, device);
    linear(tx, tw, lin_out);
    expect_close(lin_out.to_vector(), lin, d, tolerance(DType::f32, type, d.k), "linear");
}

TEST_F(CudaMatmul, F32) {
    for (Dims d : named_shapes()) run_public_case<float>(device, d);
}
TEST_F(CudaMatmul, F16AndF32TimesF16) {
    for (Dims d : named_shapes()) run_public_case<half>(device, d);
}
TEST_F(CudaMatmul, BF16AndF32TimesBF16) {
    for (Dims d : named_shapes()) run_public_case<bfloat16>(device, d);
}

TEST_F(CudaMatmul, EmptyKGivesZeros) {
    auto a = Tensor<float>::from(std::vector<float>{}, {5, 0}, device);
    auto b = Tensor<float>::from(std::vector<float>{}, {0, 3}, device);
    auto out = poisoned({5, 3}, device);
    matmul(a, b, out);
    EXPECT_EQ(out.to_vector(), std::vector<float>(15, 0.0f));
}

TEST_F(CudaMatmul, LinearFlattensLeadingAxes) {
    auto const xv = random_floats(2 * 3 * 40, fresh_seed());
    auto const wv = random_floats(5 * 40, fresh_seed());
    auto y = linear(Tensor<float>::from(xv, {2, 3, 40}, device), Tensor<bfloat16>::from(
                                                                      std::vector<bfloat16>(wv.begin(), wv.end()), {5, 40}, device));
    EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
    Operand const x(DType::f32, xv), w(DType::bf16, wv);
    expect_close(y.to_vector(), reference(x.exact, w.exact, {6, 5, 40}, true), {6, 5, 40},
                 tolerance(DType::f32, DType::bf16, 40), "linear");
}

// ---- the op glue, every variant

using CudaMatmulOp = CudaTest;

// What the glue checks before it takes 16-byte accesses.
bool aligned(std::uint64_t a, std::uint64_t b, std::uint64_t out, Dims d, DType at, DType bt, bool b_transposed) {
    std::uint64_t const sa = at == DType::f32 ? 4 : 2, sb = bt == DType::f32 ? 4 : 2;
    return (a | b | out) % 16 == 0 && d.k * sa % 16 == 0 && (b_transposed ? d.k : d.n) * sb % 16 == 0 && d.n % 4 == 0;
}

ptx::Type ptx_type(DType t) {
    return t == DType::f32 ? ptx::Type::f32 : t == DType::f16 ? ptx::Type::f16 : ptx::Type::bf16;
}

TEST_F(CudaMatmulOp, EveryTypePairLayoutAndAlignment) {
    reset_stats();
    // The named shapes, and ones that reach every tile class with aligned rows: few rows (m ≤ 32),
    // fewer 128x128 tiles than SMs, and more.
    std::vector<Dims> shapes = named_shapes();
    for (Dims d : {Dims{24, 80, 96}, Dims{256, 256, 64}, Dims{1536, 2048, 64}, Dims{2049, 2050, 67}}) shapes.push_back(d);
    std::pair<DType, DType> const pairs[] = {{DType::f32, DType::f32},   {DType::f16, DType::f16}, {DType::bf16, DType::bf16},
                                             {DType::f32, DType::f16},   {DType::f32, DType::bf16}};
    std::set<std::string> ran;
    for (auto const& pair : pairs)
        for (bool b_transposed : {false, true})
            for (Dims d : shapes) {
                DType const at = pair.first, bt = pair.second;
                auto const seed = fresh_seed();
                std::string const what = std::string(to_string(at)) + " x " + std::string(to_string(bt)) +
                                         (b_transposed ? " (b transposed)" : "") + " seed " + std::to_string(seed);
                SCOPED_TRACE(what);
                Operand const a(at, random_floats(d.m * d.k, seed, -1.0f, 1.0f));
                Operand const b(bt, random_floats(d.k * d.n, seed + 1, -1.0f, 1.0f));
                Reference const ref = reference(a.exact, b.exact, d, b_transposed);
                // Views at the start of their buffers, and one element in (misaligned for 16-byte access).
                for (std::size_t shift : {0u, 1u}) {
                    DeviceBuffer a_buffer(*backend, (a.size() + 1) * a.element_bytes());
                    DeviceBuffer b_buffer(*backend, (b.size() + 1) * b.element_bytes());
                    DeviceBuffer out_buffer(*backend, (d.m * d.n + 1) * 4);
                    detail::TensorView const av{a_buffer.handle(), shift * a.element_bytes(), a.size(), at};
                    detail::TensorView const bv{b_buffer.handle(), shift * b.element_bytes(), b.size(), bt};
                    detail::TensorView const ov{out_buffer.handle(), shift * 4, d.m * d.n, DType::f32};
                    if (a.size() != 0) backend->upload(av.buffer, av.offset, a.bytes(), a.size() * a.element_bytes());
                    if (b.size() != 0) backend->upload(bv.buffer, bv.offset, b.bytes(), b.size() * b.element_bytes());
                    std::vector<float> const poison_values(d.m * d.n, poison);
                    backend->upload(ov.buffer, ov.offset, poison_values.data(), poison_values.size() * 4);

                    backend->with_runner([&](cuda::KernelRunner& runner) {
                        bool const fits = aligned(runner.address(av), runner.address(bv), runner.address(ov), d, at,
                                                  bt, b_transposed);
                        auto const config = ptx::kernels::choose_gemm_config(
                            d.m, d.n, d.k, ptx_type(at), ptx_type(bt), b_transposed, fits, runner.multiprocessor_count(),
                            runner.target());
                        ran.insert(ptx::kernels::gemm_name(config));
                        SCOPED_TRACE(ptx::kernels::gemm_name(config));
                        cuda::ops::matmul(runner, {d.m, d.n, d.k, b_transposed}, av, bv, ov);
                    });
                    std::vector<float> got(d.m * d.n);
                    backend->download(ov.buffer, ov.offset, got.data(), got.size() * 4);
                    expect_close(got, ref, d, tolerance(at, bt, d.k), shift ? "misaligned" : "aligned");
                }
            }
    ptx::Target target{};
    backend->with_runner([&](cuda::KernelRunner& runner) { target = runner.target(); });
    for (auto const& c : ptx::kernels::chosen_gemm_configs(target))
        EXPECT_TRUE(ran.contains(ptx::kernels::gemm_name(c))) << ptx::kernels::gemm_name(c) << " never ran";
    EXPECT_EQ(rayo::stats().cpu_fallbacks, 0u);
}

}  // namespace
}  // namespace rayo::test
