// The CUDA backend's K-quant GEMV kernels run through its own glue (cuda::ops::linear_kquant) in the
// host PTX simulator, so CI checks them without a GPU: the fused GEMV in both forms (weights loaded
// into registers, and streamed through per-warp cp.async rings, whose copies the simulator lands
// only when the issuing thread waits for them), against a float64 reference on the dequantized
// weights, with poisoned outputs. Shapes cover a partial last ring slot (q4_k, 9 blocks a row),
// warps that take several rows (more rows than the simulated grid's 32 warps), two rows of x, and
// the fallback of q6_k rows that are not 16-byte multiples; each with linear's bias. q5_k, q8_0 and
// q4_0 weights: dequantize bit for bit against the CPU reference (f32, and f16 for the decoded
// GEMM), their GEMVs in every form the glue picks, and many rows of x through the decoded GEMM.
#include "support/ptx_simulator.hpp"
#include "support/test_support.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <regex>
#include <string>

#include "cuda/ops/ops.hpp"
#include "quant/reference_quantizer.hpp"
#include "rayo/ptx/kernels/quant.hpp"

namespace rayo::test {
namespace {

using ptxsim::HostView;
using ptxsim::SimulatedRunner;

// An H100's or H200's multiprocessor: 228 KiB of shared memory, 1 KiB reserved a block.
constexpr cuda::MultiprocessorSharedMemory hopper_multiprocessor{.bytes = 233472, .reserved_per_block = 1024};

// The GEMV forms the glue picks from (quantization.cpp); records: quantize_activations + quant_gemv.
enum class Form { spanning, streamed, registers, records };

struct Case {
    DType type;
    std::size_t m, n, k;
    Form form;  // which form the glue must pick on a device with 227 KiB of shared memory
};

Form form_of(std::string const& key) {
    if (key.find("gemv_spanning") != std::string::npos) return Form::spanning;
    if (key.find("gemv_fused") == std::string::npos) return Form::records;
    return key.find(".s0.") == std::string::npos ? Form::streamed : Form::registers;
}

// ‖y − ref‖ / max(‖ref‖, its typical size), as tests/cuda_quant_test.cpp measures it.
// Runs the case through the glue, or (`direct`) launches that spanning GEMV itself on 3 blocks.
template <QuantBlock W>
double simulated_linear_error(Case const& c, std::uint32_t seed,
                              std::optional<ptx::kernels::QuantGemvSpanningConfig> const& direct = std::nullopt,
                              ptx::Target target = ptx::Target::sm_90) {
    SimulatedRunner runner(2, target);
    runner.set_max_shared_bytes(227 * 1024);
    runner.set_multiprocessor_shared(hopper_multiprocessor);
    auto const w = quantize<W>(Tensor<float>::from(random_floats(c.n * c.k, seed, -1.0f, 1.0f), {c.n, c.k}));
    std::vector<W> const blocks = w.to_vector();
    std::vector<float> const wv = dequantize(w).to_vector();
    std::vector<float> const xv = activation_like(c.m, c.k, seed + 1);

    HostView<float> x(runner, xv.size(), 0, DType::f32);
    HostView<W> wt(runner, blocks.size(), 0, dtype_of<W>);
    HostView<float> out(runner, c.m * c.n, 0, DType::f32);
    // Through the glue with linear's bias, which the one-row spanning GEMV adds as it stores and
    // the caller adds after the others (here on the host).
    std::vector<float> const bias = direct ? std::vector<float>(c.n, 0.0f) : random_floats(c.n, seed + 2, -4.0f, 4.0f);
    HostView<float> bias_view(runner, c.n, 0, DType::f32);
    bias_view.fill(bias);
    x.fill(xv);
    wt.fill(blocks);
    out.fill(std::vector<float>(c.m * c.n, poison));
    if (direct) {
        namespace kernels = ptx::kernels;
        unsigned const ctas = 3, rows_per_step = direct->groups * direct->batch;
        std::size_t const steps = ((c.n + rows_per_step - 1) / rows_per_step + ctas - 1) / ctas;
        cuda::LaunchDims const dims{
            .grid = {ctas, 1, 1},
            .block = {direct->groups * kernels::quant_gemv_spanning_group_threads(direct->blocks_per_row), 1, 1},
            .shared_bytes = static_cast<unsigned>(kernels::quant_gemv_spanning_shared_bytes(*direct, steps))};
        runner.run(
            "direct", [&] { return kernels::quant_gemv_spanning(*direct); }, dims, runner.address(wt.view()),
            runner.address(x.view()), runner.address(out.view()), static_cast<std::uint32_t>(c.n));
    }
    bool bias_added = true;
    if (!direct) {
        auto const bias_matrix = bias_view.matrix(1, c.n);
        bias_added = cuda::ops::linear_kquant(runner, {c.m, c.n, c.k, true}, x.matrix(c.m, c.k), wt.matrix(c.n, c.k),
                                              &bias_matrix, out.matrix(c.m, c.n));
        EXPECT_EQ(bias_added, c.form == Form::spanning && c.m == 1);
    }

    bool gemv_launched = false;
    for (auto const& l : runner.launches()) {
        gemv_launched = gemv_launched || l.key.find("gemv") != std::string::npos;
        if (!direct && l.key.find("gemv") != std::string::npos) {
            EXPECT_EQ(form_of(l.key), c.form) << "the glue picked another GEMV form: " << l.key;
        }
        // A GEMV that starts early, with more row steps than blocks (so as many blocks a
        // multiprocessor as it plans), leaves no place free there for the next kernel's blocks
        // (quant_ops.cpp). Its key names its groups and rows a step.
        std::smatch step;
        bool const spanning = std::regex_search(l.key, step, std::regex(R"(gemv_spanning\..*\.g(\d+)\.r(\d+)\.)"));
        std::size_t const row_steps = spanning ? (c.n + std::stoul(step[1]) * std::stoul(step[2]) - 1) /
                                                     (std::stoul(step[1]) * std::stoul(step[2]))
                                               : 0;
        unsigned const per_multiprocessor = l.dims.grid[0] / runner.multiprocessor_count();
        // On sm_90 q6_k, q8_0 and q4_0 blocks of one 128-thread group (k <= 4096) take whole steps
        // through bulk copies.
        if (!direct && spanning) {
            bool const ringed = c.type == DType::q6_k || ptx::kernels::small_block_weights(c.type);
            EXPECT_EQ(l.key.find(".bulk.") != std::string::npos, ringed && target == ptx::Target::sm_90 && c.k <= 4096)
                << l.key;
        }
        if (!direct && l.dims.starts_early && row_steps > l.dims.grid[0]) {
            EXPECT_EQ(l.dims.grid[0] % runner.multiprocessor_count(), 0u) << l.key;
            unsigned const taken = l.dims.shared_bytes + hopper_multiprocessor.reserved_per_block;
            EXPECT_GT((per_multiprocessor + 1) * taken, hopper_multiprocessor.bytes)
                << l.key << ": a multiprocessor has room for another block of " << l.dims.shared_bytes << " bytes";
        }
    }

    EXPECT_TRUE(direct || gemv_launched);
    std::vector<float> const raw = out.values();
    std::vector<float> y = raw;
    if (!bias_added)
        for (std::size_t i = 0; i < y.size(); ++i) y[i] += bias[i % c.n];
    double num = 0, den = 0, typical = 0;
    for (std::size_t i = 0; i < c.m; ++i)
        for (std::size_t j = 0; j < c.n; ++j) {
            double sum = bias[j];
            for (std::size_t p = 0; p < c.k; ++p) {
                double const product = double(xv[i * c.k + p]) * double(wv[j * c.k + p]);
                sum += product;
                typical += product * product;
            }
            EXPECT_TRUE(std::isfinite(raw[i * c.n + j]) && raw[i * c.n + j] != poison)
                << "out[" << i << ", " << j << "] not written";
            num += (y[i * c.n + j] - sum) * (y[i * c.n + j] - sum);
            den += sum * sum;
        }
    return std::sqrt(num / std::max({den, typical, 1e-300}));
}

// The same for a case of any block type.
double simulated_linear_error(Case const& c, std::uint32_t seed,
                              std::optional<ptx::kernels::QuantGemvSpanningConfig> const& direct = std::nullopt,
                              ptx::Target target = ptx::Target::sm_90) {
    switch (c.type) {
        case DType::q4_k: return simulated_linear_error<q4_k>(c, seed, direct, target);
        case DType::q5_k: return simulated_linear_error<q5_k>(c, seed, direct, target);
        case DType::q6_k: return simulated_linear_error<q6_k>(c, seed, direct, target);
        case DType::q8_0: return simulated_linear_error<q8_0>(c, seed, direct, target);
        case DType::q4_0: return simulated_linear_error<q4_0>(c, seed, direct, target);
        default: ADD_FAILURE() << "no linear of " << to_string(c.type) << " here"; return 1.0;
    }
}

TEST(CudaQuantSimulated, FusedGemvInBothFormsMatchesFloat64) {
    Case const cases[] = {
        {DType::q4_k, 2, 70, 2048, Form::streamed},  // 8 blocks a row: whole slots; 70 rows over 32 warps
        {DType::q4_k, 2, 37, 2304, Form::streamed},  // 9 blocks: a partial last slot; two rows of x
        {DType::q6_k, 2, 70, 2048, Form::streamed},  // 210-byte blocks, 2-byte aligned inside a slot
        {DType::q6_k, 2, 9, 2048, Form::streamed},
        {DType::q6_k, 1, 40, 2304, Form::registers},  // 9 q6_k blocks: rows not 16-byte multiples
    };
    for (Case const& c : cases) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(std::string(to_string(c.type)) + " m " + std::to_string(c.m) + " n " + std::to_string(c.n) +
                     " k " + std::to_string(c.k) + " seed " + std::to_string(seed));
        EXPECT_LE(simulated_linear_error(c, seed), 1e-3);  // what linear promises; ~1e-4 with the residual activations
    }
}

// The spanning GEMV (one row of x) as the glue launches it for sm_80 and for sm_90 (there with L2
// prefetches, started early, four rows a step and, for these few rows, a block a group): q4_k
// groups of 8 blocks (for sm_80 eight groups a CTA, two steps of 64 rows over the simulated grid's
// 4 CTAs, the last one partial), of 9 blocks (a group's last warp partly idle), one block (32-thread
// groups), and 128 blocks (one 1024-thread group, which quantizes x thread by thread; for sm_80 the
// others share it through shared memory); q6_k rows of 8, 16 and 128 blocks (every other warp's
// blocks 8 bytes past a 16-byte boundary, and 2 bytes off a 4-byte one in every other block); q5_k
// in q4_k's forms, q8_0 and q4_0 (eight 32-value blocks a 256-value group, each 2 bytes off a 4-byte
// boundary in every other block) in q6_k's. More steps than the ring has stages, so slots are reused.
TEST(CudaQuantSimulated, SpanningGemvMatchesFloat64) {
    Case const cases[] = {
        {DType::q4_k, 1, 70, 2048, Form::spanning}, {DType::q4_k, 1, 37, 2304, Form::spanning},
        {DType::q4_k, 1, 33, 256, Form::spanning},  {DType::q4_k, 1, 3, 32768, Form::spanning},
        {DType::q6_k, 1, 70, 2048, Form::spanning}, {DType::q6_k, 1, 37, 4096, Form::spanning},
        {DType::q6_k, 1, 3, 32768, Form::spanning}, {DType::q5_k, 1, 70, 2048, Form::spanning},
        {DType::q5_k, 1, 37, 2304, Form::spanning}, {DType::q5_k, 1, 3, 32768, Form::spanning},
        {DType::q8_0, 1, 70, 2048, Form::spanning}, {DType::q8_0, 1, 37, 2304, Form::spanning},
        {DType::q8_0, 1, 3, 32768, Form::spanning}, {DType::q4_0, 1, 70, 2048, Form::spanning},
        {DType::q4_0, 1, 33, 256, Form::spanning},  {DType::q4_0, 1, 3, 32768, Form::spanning},
    };
    for (ptx::Target target : {ptx::Target::sm_80, ptx::Target::sm_90})
        for (Case const& c : cases) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::string(ptx::to_string(target)) + " " + std::string(to_string(c.type)) + " n " +
                         std::to_string(c.n) + " k " + std::to_string(c.k) + " seed " + std::to_string(seed));
            // What linear promises; ~1e-4 with x's ~15 bits (as the residual records give).
            EXPECT_LE(simulated_linear_error(c, seed, std::nullopt, target), 1e-3);
        }
}

// Forms the glue does not pick, launched directly: q4_k streamed through rings of 2 and 3 stages
// (more steps than stages, slots reused; one group a block and four), and loaded into registers
// without the pipelining; x quantized by each thread with several groups a block, and through
// shared memory with one; more steps prefetched into L2 than the rows make.
TEST(CudaQuantSimulated, SpanningGemvFormsMatchFloat64) {
    struct Launch {
        std::size_t n, k;
        ptx::kernels::QuantGemvSpanningConfig config;
    };
    Launch const forms[] = {
        {70, 2048, {.blocks_per_row = 8, .groups = 4, .batch = 2, .stages = 2}},
        {37, 2304, {.blocks_per_row = 9, .groups = 1, .batch = 4, .stages = 3}},
        {29, 4096, {.blocks_per_row = 16, .groups = 2, .batch = 1, .pipelined = false}},
        {41, 2048, {.weight = DType::q6_k, .blocks_per_row = 8, .groups = 2, .batch = 1, .stages = 3}},
        {45, 2048, {.blocks_per_row = 8, .groups = 4, .batch = 2, .share_x = false}},
        {19,
         4096,
         {.weight = DType::q6_k, .blocks_per_row = 16, .groups = 1, .batch = 2, .stages = 2, .share_x = true}},
        // Prefetches into L2 of more steps than there are (the last one partial): every prefetched
        // byte must lie in the weights (the simulator checks each range), none past the last row.
        {53, 2048, {.blocks_per_row = 8, .groups = 4, .batch = 4, .prefetch_steps = 16, .early_start = true}},
        {41,
         2048,
         {.weight = DType::q6_k,
          .blocks_per_row = 8,
          .groups = 1,
          .batch = 2,
          .stages = 2,
          .prefetch_steps = 3,
          .early_start = true}},
        // Whole steps through bulk copies: more steps than slots (slots reused after every warp
        // released them), a partial last step, four groups sharing x, and q6_k's unaligned blocks.
        {75,
         2048,
         {.blocks_per_row = 8,
          .groups = 4,
          .batch = 2,
          .stages = 3,
          .prefetch_steps = 1,
          .early_start = true,
          .bulk = true}},
        {45,
         4096,
         {.weight = DType::q6_k,
          .blocks_per_row = 16,
          .groups = 1,
          .batch = 2,
          .stages = 2,
          .share_x = false,
          .early_start = true,
          .bulk = true}},
        {23, 2304, {.blocks_per_row = 9, .groups = 1, .batch = 4, .stages = 4, .share_x = false, .bulk = true}},
        // q5_k and q8_0 / q4_0 in the forms the glue does not pick for them.
        {37, 2304, {.weight = DType::q5_k, .blocks_per_row = 9, .groups = 2, .batch = 2, .stages = 3}},
        {29,
         4096,
         {.weight = DType::q5_k, .blocks_per_row = 16, .groups = 1, .batch = 1, .pipelined = false, .share_x = false}},
        {27, 2048, {.weight = DType::q5_k, .blocks_per_row = 8, .groups = 1, .batch = 2, .stages = 2, .bulk = true}},
        {41,
         2304,
         {.weight = DType::q8_0, .blocks_per_row = 9, .groups = 2, .batch = 2, .stages = 3, .share_x = false}},
        {41, 2304, {.weight = DType::q4_0, .blocks_per_row = 9, .groups = 1, .batch = 4, .stages = 2, .share_x = true}},
        {23, 2048, {.weight = DType::q4_0, .blocks_per_row = 8, .groups = 2, .batch = 2, .stages = 3, .bulk = true}},
    };
    for (Launch const& f : forms) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(std::string(to_string(f.config.weight)) + " n " + std::to_string(f.n) + " k " +
                     std::to_string(f.k) + " stages " + std::to_string(f.config.stages) + " seed " +
                     std::to_string(seed));
        Case const c{f.config.weight, 1, f.n, f.k, Form::spanning};
        EXPECT_LE(simulated_linear_error(c, seed, f.config), 1e-3);
    }
}

// ---- q5_k, q8_0 and q4_0 ---------------------------------------------------------------------------

// Blocks of random bytes with finite scales (an f16 of magnitude up to 2^4, subnormals included), so
// every code and every packed scale and min occurs.
template <QuantBlock B>
std::vector<B> random_blocks(std::size_t count, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<B> blocks(count);
    for (B& b : blocks) {
        std::array<std::uint8_t, sizeof(B)> bytes{};
        for (auto& byte : bytes) byte = static_cast<std::uint8_t>(rng());
        std::memcpy(&b, bytes.data(), sizeof(B));
        auto const finite = [&] {
            auto const bits = static_cast<std::uint16_t>((rng() & 0x4fff) ^ (rng() & 0x8000));
            return std::bit_cast<half>(bits);
        };
        b.d = finite();
        if constexpr (std::same_as<B, q5_k>) b.dmin = finite();
    }
    return blocks;
}

// dequantize through the glue (f32), and the kernel the decoded GEMM launches (f16), against the
// CPU reference bit for bit; counts that leave a warp's eight q8_0 / q4_0 blocks partly empty.
template <QuantBlock B>
void expect_dequantize_bit_exact(std::size_t count, std::uint32_t seed) {
    SCOPED_TRACE(std::string(to_string(dtype_of<B>)) + ", " + std::to_string(count) + " blocks, seed " +
                 std::to_string(seed));
    std::vector<B> const blocks = random_blocks<B>(count, seed);
    std::size_t const values = count * block_values_of<B>;
    std::vector<float> want(values);
    quant::reference::dequantize<B>(blocks.data(), want.data(), count);
    SimulatedRunner runner(2, ptx::Target::sm_90);
    HostView<B> in(runner, count, 0, dtype_of<B>);
    HostView<float> out(runner, values + 64, 0, DType::f32);  // 64 guard values past the end
    HostView<half> out_half(runner, values + 64, 0, DType::f16);
    in.fill(blocks);
    out.fill(std::vector<float>(values + 64, poison));
    out_half.fill(std::vector<half>(values + 64, half(poison)));
    detail::TensorView const f32_out = out.matrix(1, values);
    cuda::ops::run(runner, detail::op::Dequantize{}, detail::OpViews{std::span(&in.view(), 1), std::span(&f32_out, 1)});
    namespace kernels = ptx::kernels;
    kernels::DequantizeConfig const config{.type = dtype_of<B>, .threads = 64, .output = ptx::Type::f16};
    auto const warps = static_cast<unsigned>((count + kernels::dequantize_blocks_per_warp(config.type) - 1) /
                                             kernels::dequantize_blocks_per_warp(config.type));
    runner.run(
        "f16", [&] { return kernels::dequantize(config); },
        cuda::LaunchDims{.grid = {(warps + 1) / 2, 1, 1}, .block = {64, 1, 1}}, runner.address(in.view()),
        runner.address(out_half.view()), static_cast<std::uint32_t>(count));
    std::vector<float> const got = out.values();
    std::vector<half> const got_half = out_half.values();
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < values; ++i) {
        bool const same = std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want[i]) &&
                          std::bit_cast<std::uint16_t>(got_half[i]) == std::bit_cast<std::uint16_t>(half(want[i]));
        if (!same && ++mismatches <= 5)
            ADD_FAILURE() << "value " << i << ": " << got[i] << " / " << float(got_half[i]) << ", want " << want[i];
    }
    EXPECT_EQ(mismatches, 0u);
    for (std::size_t i = values; i < values + 64; ++i) {
        EXPECT_EQ(got[i], poison) << "written past the end at " << i;
        EXPECT_EQ(std::bit_cast<std::uint16_t>(got_half[i]), std::bit_cast<std::uint16_t>(half(poison)));
    }
}

TEST(CudaQuantSimulated, DequantizeQ5kQ80Q40MatchTheCpuBitForBit) {
    for (std::size_t count : {1u, 7u, 8u, 13u, 40u}) {
        expect_dequantize_bit_exact<q8_0>(count, fresh_seed());
        expect_dequantize_bit_exact<q4_0>(count, fresh_seed());
    }
    for (std::size_t count : {1u, 3u, 10u}) expect_dequantize_bit_exact<q5_k>(count, fresh_seed());
}

// linear with q5_k, q8_0 and q4_0 weights through the glue, in the forms other than the spanning
// GEMV (above): q5_k in q4_k's fused form (streamed, 2 rows, a ring's slot left partial) and the
// records form (3 and 8 rows); q8_0 / q4_0 in the records form at row lengths that end inside a
// 256-value record (96, 288 values: 3 and 9 blocks; one row of those too) and long ones. (Many rows of x take the
// decoded f16 GEMM, whose conversion of x, cvt.rn.f16x2.f32, the simulator does not model: tests/cuda_quant_test.cpp
// runs it on a GPU.)
TEST(CudaQuantSimulated, GemvAndGemmOfQ5kQ80Q40MatchFloat64) {
    Case const cases[] = {
        {DType::q5_k, 2, 70, 2048, Form::streamed}, {DType::q5_k, 2, 37, 2304, Form::streamed},
        {DType::q5_k, 3, 33, 512, Form::records},   {DType::q5_k, 8, 9, 256, Form::records},
        {DType::q8_0, 1, 11, 96, Form::records},    {DType::q8_0, 3, 70, 288, Form::records},
        {DType::q8_0, 8, 37, 2048, Form::records},  {DType::q8_0, 1, 33, 4160, Form::records},
        {DType::q4_0, 1, 11, 96, Form::records},    {DType::q4_0, 3, 70, 288, Form::records},
        {DType::q4_0, 5, 37, 2048, Form::records},  {DType::q4_0, 2, 20, 160, Form::records},
    };
    for (Case const& c : cases) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(std::string(to_string(c.type)) + " m " + std::to_string(c.m) + " n " + std::to_string(c.n) +
                     " k " + std::to_string(c.k) + " seed " + std::to_string(seed));
        EXPECT_LE(simulated_linear_error(c, seed), 1e-3);
    }
}

}  // namespace
}  // namespace rayo::test
