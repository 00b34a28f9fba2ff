// The attention generators: configuration checks, names, shared memory, and every variant the
// CUDA attention may load (attention_configs, the combine kernels) assembled by ptxas for sm_80
// and sm_90; the prefill kernel rayo runs for head_dim 128 without spills.
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/attention.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;

TEST(PtxAttention, RejectsConfigsItCannotBuild) {
    EXPECT_THROW(check_attention_config({.head_dim = 72}), BuildError);
    EXPECT_THROW(check_attention_config({.element = DType::f32}), BuildError) << "tensor cores take 16-bit elements";
    EXPECT_THROW(check_attention_config({.warps = 2}), BuildError);
    EXPECT_THROW(check_attention_config({.partial = true}), BuildError);
    EXPECT_THROW(check_attention_config({.warp_tiles = 3}), BuildError);
    EXPECT_THROW(check_attention_config({.head_dim = 256, .warps = 8, .warp_tiles = 2}), BuildError)
        << "too much shared memory";
    EXPECT_THROW(check_attention_config({.algorithm = AttentionAlgorithm::decode, .mask = true}), BuildError);
    EXPECT_THROW(check_attention_config({.algorithm = AttentionAlgorithm::decode, .head_dim = 40}), BuildError);
    EXPECT_THROW(check_attention_config({.algorithm = AttentionAlgorithm::simt, .element = DType::i32}), BuildError);
    EXPECT_THROW(check_attention_config({.algorithm = AttentionAlgorithm::simt, .rows = 9}), BuildError);
    EXPECT_THROW(check_attention_config(
                     {.algorithm = AttentionAlgorithm::simt, .element = DType::f32, .head_dim = 256, .warps = 4}),
                 BuildError)
        << "four warps of f32 rows of 256 need more shared memory than a block has";
    EXPECT_NO_THROW(check_attention_config(
        {.algorithm = AttentionAlgorithm::simt, .element = DType::f32, .head_dim = 80, .warps = 1, .rows = 3}));
    constexpr auto wgmma = AttentionAlgorithm::wgmma;
    EXPECT_NO_THROW(check_attention_config({.algorithm = wgmma, .head_dim = 64, .warps = 12}));
    EXPECT_THROW(check_attention_config({.algorithm = wgmma, .head_dim = 96, .warps = 12}), BuildError);
    EXPECT_THROW(check_attention_config({.algorithm = wgmma, .head_dim = 128, .mask = true, .warps = 12}), BuildError);
    EXPECT_THROW(check_attention_config({.algorithm = wgmma, .head_dim = 128, .warps = 8}), BuildError);
    EXPECT_THROW(check_attention_config({.algorithm = wgmma, .element = DType::f32, .warps = 12}), BuildError);
}

// Hopper's kernel: one producer thread's TMA copies, wgmma from shared memory for S and with P
// from registers for O, both consumers' register budgets, and the tensor maps it takes.
TEST(PtxAttention, WgmmaKernelIsWarpSpecialised) {
    AttentionConfig const c{
        .algorithm = AttentionAlgorithm::wgmma, .element = DType::bf16, .head_dim = 128, .warps = 12};
    EXPECT_EQ(attention_name(c), "rayo_attention_wgmma_bf16_d128_w12");
    EXPECT_EQ(attention_shared_bytes(c), 128u * 256u + 4u * 128u * 256u + 1024u + 8u + 64u);
    Kernel const kernel = attention(c);
    EXPECT_TRUE(kernel.architecture_specific());
    std::string const text = kernel.emit(Target::sm_90a);
    auto const count = [&](std::string_view what) {
        std::size_t n = 0;
        for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"), 2u * (8u + 8u))
        << "S (d / 16 steps) and O (128 keys / 16 steps), in the first block and in the loop";
    EXPECT_EQ(count("cp.async.bulk.tensor.4d.shared::cluster.global.tile"), 2u + 2u * 2u) << "q once, then k and v";
    EXPECT_EQ(count("setmaxnreg.inc.sync.aligned.u32 240;"), 1u);
    EXPECT_EQ(count("wgmma.wait_group.sync.aligned 1;"), 1u) << "the softmax runs under the previous block's P v";
    EXPECT_NE(text.find("}, {%b"), std::string::npos) << "P from registers";
    EXPECT_EQ(count("bar.sync 1, 256;") + count("bar.sync 2, 256;"), 2u * 3u) << "the consumers take turns at the MMAs";
    EXPECT_NE(text.find("bar.arrive 2, 256;"), std::string::npos);
    auto const maps = attention_tensor_maps(
        c, {.q = 0x1000, .k = 0x2000, .v = 0x3000, .batch = 2, .q_len = 70, .kv_len = 90, .heads = 8, .kv_heads = 2});
    EXPECT_EQ(maps[0].rank, 4u);
    EXPECT_EQ(maps[0].dims[2], 70u);
    EXPECT_EQ(maps[0].strides[2], 8u * 256u) << "a row of q spans every head";
    EXPECT_EQ(maps[1].dims[1], 2u);
    EXPECT_EQ(maps[2].address, 0x3000u);
    EXPECT_EQ(maps[1].box[2], 128u);
    EXPECT_THROW((void)attention_tensor_maps({}, {}), BuildError);
}

TEST(PtxAttention, NamesSpellEveryFieldAndSharedMemoryFits) {
    EXPECT_EQ(attention_name({}), "rayo_attention_tc_f16_d128_w4");
    EXPECT_EQ(attention_name({.algorithm = AttentionAlgorithm::simt,
                              .element = DType::bf16,
                              .head_dim = 80,
                              .mask = true,
                              .warps = 2,
                              .rows = 4,
                              .partial = true}),
              "rayo_attention_simt_bf16_d80_w2_r4_mask_partial");
    EXPECT_EQ(attention_shared_bytes({}), (64u + 256u) * 272u);
    EXPECT_EQ(attention_name({.warp_tiles = 2}), "rayo_attention_tc_f16_d128_w4_m2");
    EXPECT_EQ(attention_shared_bytes({.warp_tiles = 2}), (128u + 256u) * 272u);
    EXPECT_EQ(attention_name({.algorithm = AttentionAlgorithm::decode, .partial = true}),
              "rayo_attention_decode_f16_d128_w4_partial");
    EXPECT_EQ(attention_shared_bytes({.algorithm = AttentionAlgorithm::decode}), (16u + 4u * 64u) * 272u);
    std::set<std::string> names;
    for (AttentionConfig const& c : attention_configs(Target::sm_90)) {
        EXPECT_TRUE(names.insert(attention_name(c)).second) << "two variants named " << attention_name(c);
        EXPECT_EQ(attention(c).name(), attention_name(c));
        EXPECT_LE(attention_shared_bytes(c), 227u * 1024u) << attention_name(c);
        if (c.algorithm == AttentionAlgorithm::simt) {
            EXPECT_LE(attention_shared_bytes(c), attention_simt_block_budget);
        }
    }
    EXPECT_EQ(attention_partial_bytes(3, 5, 64), 3u * 5u * (8u + 256u));
}

TEST(PtxAttention, EmitsTheTensorCoreInstructions) {
    std::string const text = attention({.element = DType::bf16}).emit(Target::sm_80);
    EXPECT_NE(text.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), std::string::npos);
    EXPECT_NE(text.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), std::string::npos);
    EXPECT_NE(text.find("cp.async.cg.shared.global"), std::string::npos);
    EXPECT_NE(text.find("ex2.approx"), std::string::npos);
}

TEST(PtxAttention, EveryVariantEmitsForEveryTarget) {
    for (Target t : {Target::sm_80, Target::sm_86, Target::sm_89, Target::sm_90, Target::sm_90a}) {
        for (AttentionConfig const& c : attention_configs(t)) {
            Kernel const kernel = attention(c);
            EXPECT_NO_THROW((void)kernel.emit(emission_target(kernel, t))) << attention_name(c);
        }
        for (DType e : {DType::f32, DType::f16, DType::bf16}) EXPECT_NO_THROW((void)attention_combine(e, 80).emit(t));
    }
}

// ---- ptxas

// Every variant for one target, and the combine kernels: a test a target, so that ctest runs the
// two (several minutes of ptxas each in CI) side by side.
void expect_every_variant_assembles(Target t) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (AttentionConfig const& c : attention_configs(t)) {
        SCOPED_TRACE(attention_name(c) + " " + std::string(to_string(t)));
        Kernel const kernel = attention(c);
        expect_assembles(kernel, emission_target(kernel, t));
    }
    for (DType e : {DType::f32, DType::f16, DType::bf16})
        for (unsigned d : {64u, 80u, 96u, 128u, 256u}) expect_assembles(attention_combine(e, d), t);
}

TEST(PtxAttention, EveryVariantAssemblesForSm80) { expect_every_variant_assembles(Target::sm_80); }
TEST(PtxAttention, EveryVariantAssemblesForSm90) { expect_every_variant_assembles(Target::sm_90); }

// The kernels rayo runs for head_dim 128 keep their fragments, S and O in registers: decode and the
// one-tile prefill without spilling; the two-tile prefill (O and S of 32 rows, 192 registers) at
// the 255-register limit with at most a few registers spilled.
TEST(PtxAttention, Head128KernelsKeepTheirStateInRegisters) {
    RAYO_SKIP_WITHOUT_PTXAS();
    namespace fs = std::filesystem;
    for (AttentionConfig const& c :
         {AttentionConfig{.element = DType::f16, .warp_tiles = 2},
          AttentionConfig{.element = DType::bf16, .warp_tiles = 2}, AttentionConfig{.element = DType::f16},
          AttentionConfig{.algorithm = AttentionAlgorithm::decode, .partial = true}}) {
        Kernel const kernel = attention(c);
        fs::path const dir = fs::path(RAYO_PTX_TEST_DIR);
        fs::create_directories(dir);
        fs::path const source = dir / (kernel.name() + ".usage.ptx"), log = dir / (kernel.name() + ".usage.log");
        std::ofstream(source) << kernel.emit(Target::sm_90);
        std::string const command = "'" + ptxas_path() + "' -v -arch=sm_90 '" + source.string() + "' -o /dev/null > '" +
                                    log.string() + "' 2>&1";
        ASSERT_EQ(std::system(command.c_str()), 0);
        std::stringstream text;
        text << std::ifstream(log).rdbuf();
        std::smatch match;
        std::string const s = text.str();
        ASSERT_TRUE(std::regex_search(s, match, std::regex(R"((\d+) bytes spill stores)"))) << s;
        EXPECT_LE(std::stoi(match[1]), c.warp_tiles == 2 ? 32 : 0) << s;
    }
}

}  // namespace
}  // namespace rayo::test
