// The CUDA attention kernels run through their glue (cuda::ops::run for op::Attention) in the host
// PTX simulator, against a float64 reference on the inputs as stored: the tensor-core prefill kernel
// (f16, bf16; causal, masked, grouped-query heads, partial query and key blocks, every native
// head_dim) on an sm_80 GPU, Hopper's wgmma kernel on an sm_90 one (its TMA rings turning over
// more key blocks than they have slots), the decode kernel (one split or several, merged by the combine, up to 16 rows
// a key/value head), the SIMT kernel for f32, and its split-key path for other head_dims. Outputs start poisoned; rows
// that see no key must come out as zeros.
#include "support/ptx_simulator.hpp"
#include "support/test_support.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "cuda/ops/ops.hpp"

namespace rayo::test {
namespace {

using ptxsim::HostView;
using ptxsim::SimulatedRunner;

struct Case {
    DType type;
    std::size_t batch, q_len, kv_len, heads, kv_heads, head_dim;
    bool causal;
    std::int64_t query_offset;
    bool mask;                // a [q_len, kv_len] mask shared by batches and heads, some -Inf
    std::string_view kernel;  // a piece of the key of the kernel the glue must run
    ptx::Target target = ptx::Target::sm_90;
};

float round_to(DType t, float x) {
    if (t == DType::f16) return detail::half_bits_to_float(detail::float_to_half_bits(x));
    if (t == DType::bf16) return detail::bfloat16_bits_to_float(detail::float_to_bfloat16_bits(x));
    return x;
}

// A tensor of `type` in simulator memory holding `values` (already representable).
struct Operand {
    HostView<std::uint16_t> half;
    HostView<float> single;
    DType type;
    Operand(SimulatedRunner& runner, DType t, std::vector<float> const& values, std::vector<std::int64_t> const& shape)
        : half(runner, t == DType::f32 ? 0 : values.size(), 0, t == DType::f32 ? DType::f16 : t),
          single(runner, t == DType::f32 ? values.size() : 0, 0, DType::f32),
          type(t) {
        if (t == DType::f32)
            single.fill(values);
        else {
            std::vector<std::uint16_t> bits;
            for (float v : values)
                bits.push_back(t == DType::f16 ? detail::float_to_half_bits(v) : detail::float_to_bfloat16_bits(v));
            half.fill(bits);
        }
        view_ = detail::contiguous_view(base().buffer, base().offset, t, shape);
    }
    [[nodiscard]] detail::TensorView const& base() const { return type == DType::f32 ? single.view() : half.view(); }
    [[nodiscard]] detail::TensorView const& view() const { return view_; }
    [[nodiscard]] std::vector<float> values() const {
        if (type == DType::f32) return single.values();
        std::vector<float> out;
        for (std::uint16_t b : half.values())
            out.push_back(type == DType::f16 ? detail::half_bits_to_float(b) : detail::bfloat16_bits_to_float(b));
        return out;
    }
    detail::TensorView view_;
};

std::vector<float> random_of(DType t, std::size_t n, std::uint32_t seed) {
    std::vector<float> v = random_floats(n, seed, -2.0f, 2.0f);
    for (float& x : v) x = round_to(t, x);
    return v;
}

void check(Case const& c) {
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::string(to_string(c.type)) + " b " + std::to_string(c.batch) + " q " + std::to_string(c.q_len) +
                 " kv " + std::to_string(c.kv_len) + " h " + std::to_string(c.heads) + "/" +
                 std::to_string(c.kv_heads) + " d " + std::to_string(c.head_dim) + " seed " + std::to_string(seed));
    SimulatedRunner runner(2, c.target);
    runner.set_max_shared_bytes(227 * 1024);
    std::size_t const d = c.head_dim, q_n = c.batch * c.q_len * c.heads * d, kv_n = c.batch * c.kv_len * c.kv_heads * d;
    std::vector<float> const qv = random_of(c.type, q_n, seed), kv = random_of(c.type, kv_n, seed + 1),
                             vv = random_of(c.type, kv_n, seed + 2);
    std::vector<float> mv(c.q_len * c.kv_len, 0.0f);
    if (c.mask) {
        mv = random_floats(mv.size(), seed + 3, -3.0f, 3.0f);
        for (std::size_t i = 0; i < mv.size(); i += 3) mv[i] = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < c.kv_len; ++j)
            mv[j] = -std::numeric_limits<float>::infinity();  // row 0 sees nothing
    }
    auto const b = static_cast<std::int64_t>(c.batch), sq = static_cast<std::int64_t>(c.q_len),
               skv = static_cast<std::int64_t>(c.kv_len), h = static_cast<std::int64_t>(c.heads),
               hk = static_cast<std::int64_t>(c.kv_heads), dd = static_cast<std::int64_t>(d);
    Operand q(runner, c.type, qv, {b, sq, h, dd}), k(runner, c.type, kv, {b, skv, hk, dd}),
        v(runner, c.type, vv, {b, skv, hk, dd});
    Operand out(runner, c.type, std::vector<float>(q_n, round_to(c.type, 1e4f)), {b, sq, h, dd});
    Operand mask(runner, DType::f32, mv, {sq, skv});
    float const scale = 1.0f / std::sqrt(static_cast<float>(d));
    detail::op::Attention const a{.batch = c.batch,
                                  .q_len = c.q_len,
                                  .kv_len = c.kv_len,
                                  .heads = c.heads,
                                  .kv_heads = c.kv_heads,
                                  .head_dim = d,
                                  .scale = scale,
                                  .causal = c.causal,
                                  .query_offset = c.query_offset,
                                  .has_mask = c.mask,
                                  .mask_batch = 0,
                                  .mask_head = 0,
                                  .mask_row = c.kv_len};
    std::vector<detail::TensorView> in{q.view(), k.view(), v.view()};
    if (c.mask) in.push_back(mask.view());
    std::vector<detail::TensorView> outs{out.view()};
    detail::OpViews const views{in, outs};
    ASSERT_TRUE(cuda::ops::supports(runner, a, views).native);
    cuda::ops::run(runner, a, views);
    ASSERT_FALSE(runner.launches().empty());
    EXPECT_NE(runner.launches()[0].key.find(c.kernel), std::string::npos) << runner.launches()[0].key;
    EXPECT_EQ(runner.live_temporaries(), 0u);

    // Error against Σ p·|v| of the row (the size of what is summed); the tolerance covers P and
    // the output rounded to the element type and exp2.approx.
    double const tolerance = c.type == DType::f32 ? 2e-5 : c.type == DType::f16 ? 3e-3 : 2e-2;
    std::vector<float> const got = out.values();
    double worst = 0;
    std::size_t const group = c.heads / c.kv_heads;
    for (std::size_t bi = 0; bi < c.batch; ++bi)
        for (std::size_t i = 0; i < c.q_len; ++i)
            for (std::size_t hi = 0; hi < c.heads; ++hi) {
                std::size_t const hki = hi / group;
                std::vector<double> s(c.kv_len, -std::numeric_limits<double>::infinity());
                double top = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < c.kv_len; ++j) {
                    if (c.causal && static_cast<std::int64_t>(j) > c.query_offset + static_cast<std::int64_t>(i))
                        continue;
                    double dot = 0;
                    for (std::size_t e = 0; e < d; ++e)
                        dot += double(qv[((bi * c.q_len + i) * c.heads + hi) * d + e]) *
                               double(kv[((bi * c.kv_len + j) * c.kv_heads + hki) * d + e]);
                    s[j] = dot * scale + (c.mask ? double(mv[i * c.kv_len + j]) : 0.0);
                    top = std::max(top, s[j]);
                }
                double sum = 0;
                for (double& x : s) sum += x = std::isinf(top) ? 0.0 : std::exp(x - top);
                for (std::size_t e = 0; e < d; ++e) {
                    double want = 0, size = 0;
                    for (std::size_t j = 0; j < c.kv_len; ++j) {
                        double const p = sum > 0 ? s[j] / sum : 0.0;
                        double const x = vv[((bi * c.kv_len + j) * c.kv_heads + hki) * d + e];
                        want += p * x;
                        size += p * std::abs(x);
                    }
                    float const y = got[((bi * c.q_len + i) * c.heads + hi) * d + e];
                    double const error = std::abs(y - want) / std::max(size, 1e-3);
                    worst = std::max(worst, error);
                    if (!(error <= tolerance)) {
                        ADD_FAILURE() << "out[" << bi << ", " << i << ", " << hi << ", " << e << "] = " << y
                                      << ", want " << want;
                        return;
                    }
                }
            }
    ::testing::Test::RecordProperty("worst", std::to_string(worst));
    if (std::getenv("RAYO_ATTENTION_WORST")) std::printf("worst %g\n", worst);
}

TEST(CudaAttentionSimulated, TensorCorePrefillMatchesFloat64) {
    constexpr auto ampere = ptx::Target::sm_80;
    check({DType::f16, 2, 70, 90, 4, 2, 64, true, 20, false, "attention_tc_f16_d64_w4_m2",
           ampere});  // partial q and key blocks
    check({DType::f16, 1, 150, 200, 2, 1, 128, true, 50, false, "attention_tc_f16_d128_w4_m2",
           ampere});  // several key blocks
    check({DType::bf16, 1, 33, 40, 2, 2, 80, false, 7, true, "attention_tc_bf16_d80_w4_m2_mask"});
    check({DType::f16, 1, 20, 24, 2, 1, 96, true, -3, false, "attention_tc_f16_d96"});  // first rows see no key
    check({DType::bf16, 1, 9, 130, 2, 1, 128, true, 121, false, "attention_tc_bf16_d128", ampere});
    check({DType::f16, 1, 17, 64, 2, 2, 256, false, 47, false, "attention_tc_f16_d256"});
}

TEST(CudaAttentionSimulated, WgmmaPrefillMatchesFloat64) {
    // Three key blocks through two-slot rings, a partial second row block, grouped heads.
    check({DType::f16, 1, 130, 300, 2, 1, 64, true, 170, false, "attention_wgmma_f16_d64_w12"});
    check({DType::bf16, 2, 70, 90, 2, 2, 128, false, 0, false, "attention_wgmma_bf16_d128_w12"});  // keys past kv_len
    check(
        {DType::f16, 1, 20, 24, 2, 1, 128, true, -3, false, "attention_wgmma_f16_d128_w12"});  // first rows see no key
    check({DType::f16, 1, 130, 140, 6, 3, 64, true, 10, false,
           "attention_wgmma_f16_d64_w12"});  // 6 heads, 2 a key/value head
}

TEST(CudaAttentionSimulated, SimtF32MatchesFloat64) {
    check({DType::f32, 1, 20, 45, 3, 1, 96, true, -3, false, "attention_simt_f32_d96"});
    check({DType::f32, 2, 9, 37, 2, 2, 64, false, 28, true, "attention_simt_f32_d64"});
    check({DType::f32, 1, 5, 40, 1, 1, 256, true, 35, false, "attention_simt_f32_d256_w1"});  // one tile slot
}

TEST(CudaAttentionSimulated, DecodeKernelMatchesFloat64) {
    check({DType::f16, 2, 1, 300, 4, 1, 128, true, 299, false, "attention_decode_f16_d128_w4_partial"});
    check({DType::bf16, 1, 3, 200, 8, 2, 80, false, 0, false, "attention_decode_bf16_d80_w4_partial"});  // 12 rows
    check({DType::f16, 1, 2, 150, 16, 2, 64, true, 140, false, "attention_decode_f16_d64_w4_partial"});  // 16 rows
    check({DType::bf16, 1, 1, 100, 2, 2, 96, true, 99, false, "attention_decode_bf16_d96_w4"});          // one split
    check({DType::f16, 1, 2, 40, 4, 4, 256, true, -1, false, "attention_decode_f16_d256_w4"});  // row 0 sees no key
}

TEST(CudaAttentionSimulated, SplitKeyDecodeMatchesFloat64) {
    check({DType::f16, 2, 1, 300, 4, 1, 40, true, 299, false, "attention_simt_f16_d40"});
    check({DType::bf16, 1, 2, 200, 4, 2, 80, false, 198, true, "attention_simt_bf16_d80"});
    check({DType::f32, 1, 1, 129, 2, 2, 64, true, 128, false, "attention_simt_f32_d64"});
}

}  // namespace
}  // namespace rayo::test
