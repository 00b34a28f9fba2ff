// The GEMM generator: configuration checks, names, launch shapes, the variant rayo picks per
// problem, the instructions each algorithm emits, and every variant the CUDA matmul may load
// (chosen_gemm_configs) assembled by ptxas for sm_80 and sm_90, the main ones without spills.
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/gemm.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;

std::size_t count(std::string const& text, std::string const& piece) {
    std::size_t n = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + piece.size())) ++n;
    return n;
}
bool contains(std::string const& text, std::string const& piece) { return text.find(piece) != std::string::npos; }

// What ptxas -v says about a kernel: registers per thread and spill bytes.
struct PtxasUsage {
    int registers = -1;
    int spill_stores = -1, spill_loads = -1;
    std::string log;
};
PtxasUsage ptxas_usage(Kernel const& kernel, Target target) {
    namespace fs = std::filesystem;
    fs::path const dir = fs::path(RAYO_PTX_TEST_DIR);
    fs::create_directories(dir);
    std::string const stem = kernel.name() + "." + ptxas_arch(target) + ".usage";
    fs::path const source = dir / (stem + ".ptx"), log = dir / (stem + ".log");
    std::ofstream(source) << kernel.emit(target);
    std::string const command = "'" + ptxas_path() + "' -v -arch=" + ptxas_arch(target) + " '" + source.string() +
                                "' -o /dev/null > '" + log.string() + "' 2>&1";
    PtxasUsage usage;
    int const status = std::system(command.c_str());
    std::stringstream text;
    text << std::ifstream(log).rdbuf();
    usage.log = text.str();
    if (status != 0) return usage;
    std::smatch match;
    if (std::regex_search(usage.log, match, std::regex(R"(Used (\d+) registers)")))
        usage.registers = std::stoi(match[1]);
    if (std::regex_search(usage.log, match, std::regex(R"((\d+) bytes spill stores, (\d+) bytes spill loads)"))) {
        usage.spill_stores = std::stoi(match[1]);
        usage.spill_loads = std::stoi(match[2]);
    }
    return usage;
}

std::string describe(GemmConfig const& c) { return gemm_name(c); }

// ---- configuration

TEST(PtxGemm, FillsInDefaultsPerAlgorithm) {
    GemmConfig const simt = gemm_resolved({});
    EXPECT_EQ(simt.algorithm, GemmAlgorithm::simt);
    EXPECT_EQ(simt.tile.m, 128u);
    EXPECT_EQ(simt.tile.n, 128u);
    EXPECT_EQ(simt.tile.k, 8u);
    EXPECT_EQ(simt.warps, 8u);
    EXPECT_EQ(simt.stages, 3u);
    EXPECT_EQ(simt.group_m, 8u);

    GemmConfig const tc = gemm_resolved({.a = Type::bf16, .b = Type::bf16});
    EXPECT_EQ(tc.algorithm, GemmAlgorithm::tensor_core);
    EXPECT_EQ(tc.tile.m, 128u);
    EXPECT_EQ(tc.tile.n, 128u);
    EXPECT_EQ(tc.tile.k, 32u);
    EXPECT_EQ(tc.warps, 4u);
    EXPECT_EQ(tc.stages, 4u);
    EXPECT_EQ(gemm_resolved({.a = Type::f32, .b = Type::f16}).algorithm, GemmAlgorithm::tensor_core);
    // The issue's spelling: sizes, then the tile.
    EXPECT_EQ(gemm_resolved({.m = 4096, .tile = {128, 128, 32}}).tile.k, 32u);
}

TEST(PtxGemm, RejectsConfigsItCannotBuild) {
    auto const rejects = [](GemmConfig const& c) {
        EXPECT_THROW((void)gemm(c), BuildError) << "a=" << name_of(c.a) << " b=" << name_of(c.b);
    };
    rejects({.a = Type::f16, .b = Type::bf16});                                   // a neither b's type nor f32
    rejects({.a = Type::f16, .b = Type::f32});                                    // narrower a than b
    rejects({.a = Type::u32, .b = Type::u32});                                    // not a float type
    rejects({.b = Type::f16, .algorithm = GemmAlgorithm::simt});                  // simt is f32 × f32
    rejects({.algorithm = GemmAlgorithm::tensor_core});                           // tensor cores need 16-bit b
    rejects({.tile = {96, 128, 8}, .warps = 4});                                  // simt warps fixed by the tile
    rejects({.tile = {128, 96, 8}});                                              // simt columns: multiples of 64
    rejects({.tile = {128, 128, 12}});                                            // simt k step
    rejects({.tile = {32, 64, 8}, .stages = 1});                                  // one stage cannot overlap
    rejects({.a = Type::f16, .b = Type::f16, .tile = {128, 128, 24}});            // tensor-core k step
    rejects({.a = Type::f16, .b = Type::f16, .warps = 3});                        // warp count
    rejects({.a = Type::f16, .b = Type::f16, .warps = 1});                        // 128x128 accumulators in one warp
    rejects({.a = Type::f16, .b = Type::f16, .tile = {64, 64, 16}, .warps = 1});  // copies do not split
    rejects({.a = Type::f16, .b = Type::f16, .tile = {256, 256, 64}, .warps = 8, .stages = 8});  // shared memory
    rejects({.a = Type::f16, .b = Type::f16, .stages = 9});
}

TEST(PtxGemm, NamesSpellEveryParameter) {
    EXPECT_EQ(gemm_name({.a = Type::bf16, .b = Type::bf16, .b_transposed = true}),
              "gemm_tc_bf16_bf16_nt_128x128x32_w4_s4_v_g8");
    EXPECT_EQ(gemm_name({}), "gemm_simt_f32_f32_nn_128x128x8_w8_s3_v_g8");
    EXPECT_EQ(gemm_name({.m = 64, .n = 4096, .k = 4096, .aligned = false, .group_m = 4}),
              "gemm_simt_f32_f32_nn_128x128x8_w8_s3_e_g4_m64_n4096_k4096");
    for (Target t : {Target::sm_80, Target::sm_90}) {
        std::set<std::string> names;
        for (GemmConfig const& c : chosen_gemm_configs(t)) {
            EXPECT_EQ(gemm(c).name(), gemm_name(c));
            EXPECT_TRUE(names.insert(gemm_name(c)).second) << "two chosen variants named " << gemm_name(c);
        }
    }
}

TEST(PtxGemm, LaunchShapes) {
    GemmLaunch const simt = gemm_launch({}, 1000, 300);
    EXPECT_EQ(simt.grid, 8u * 3u);
    EXPECT_EQ(simt.threads, 256u);
    EXPECT_EQ(simt.shared_bytes, 3u * 8u * (132u + 128u) * 4u);
    GemmLaunch const transposed = gemm_launch({.b_transposed = true}, 1, 1);
    EXPECT_EQ(transposed.grid, 1u);
    EXPECT_EQ(transposed.shared_bytes, 3u * 8u * (132u + 132u) * 4u);
    GemmLaunch const tc = gemm_launch({.a = Type::f16, .b = Type::f16}, 4096, 4096);
    EXPECT_EQ(tc.grid, 32u * 32u);
    EXPECT_EQ(tc.threads, 128u);
    EXPECT_EQ(tc.shared_bytes, 4u * (128u + 128u) * 32u * 2u);
    EXPECT_EQ(gemm_launch({.a = Type::f16, .b = Type::f16}, 0, 4096).grid, 0u);
    EXPECT_EQ(gemm_launch({.m = 256, .n = 256}, 0, 0).grid, 4u) << "baked sizes";
}

TEST(PtxGemm, ChoosesByTypeShapeAndAlignment) {
    auto const pick = [](std::uint64_t m, std::uint64_t n, Type a, Type b, bool bt, bool aligned,
                         Target target = Target::sm_90) {
        return choose_gemm_config(m, n, 64, a, b, bt, aligned, 132, target);
    };
    GemmConfig c = pick(4096, 4096, Type::f32, Type::f32, false, true);
    EXPECT_EQ(c.algorithm, GemmAlgorithm::simt);
    EXPECT_EQ(c.tile.m, 128u);
    EXPECT_EQ(c.tile.k, 16u);  // sm_90: deeper k steps, two stages
    EXPECT_EQ(c.stages, 2u);
    EXPECT_TRUE(c.aligned);
    c = pick(4096, 4096, Type::f32, Type::f32, false, true, Target::sm_80);
    EXPECT_EQ(c.tile.k, 8u);  // sm_80: 16 would spill
    EXPECT_EQ(c.stages, 3u);
    c = pick(256, 256, Type::f32, Type::f32, true, false);  // 4 large tiles < 132 SMs
    EXPECT_EQ(c.tile.m, 64u);
    EXPECT_TRUE(c.b_transposed);
    EXPECT_FALSE(c.aligned);
    c = pick(1, 4096, Type::f32, Type::f32, true, true);
    EXPECT_EQ(c.tile.m, 32u);
    c = pick(4096, 4096, Type::bf16, Type::bf16, false, true, Target::sm_80);
    EXPECT_EQ(c.algorithm, GemmAlgorithm::tensor_core);
    EXPECT_EQ(c.tile.m, 128u);
    EXPECT_EQ(c.warps, 4u);
    // sm_90: Hopper's warpgroup MMAs once the 128x256 tiles fill the SMs, aligned and a of b's type.
    c = pick(4096, 4096, Type::bf16, Type::bf16, false, true);
    EXPECT_EQ(c.algorithm, GemmAlgorithm::wgmma);
    EXPECT_EQ(c.tile.n, 256u);
    EXPECT_EQ(c.warps, 12u);
    c = pick(1024, 1024, Type::f16, Type::f16, true, true);  // 32 tiles of 128x256, 64 of 128x128
    EXPECT_EQ(c.algorithm, GemmAlgorithm::wgmma);
    EXPECT_EQ(c.tile.n, 128u);
    EXPECT_EQ(c.stages, 6u);
    EXPECT_EQ(pick(512, 512, Type::f16, Type::f16, true, true).algorithm, GemmAlgorithm::tensor_core) << "16 tiles";
    EXPECT_EQ(pick(16, 8192, Type::f16, Type::f16, true, true).algorithm, GemmAlgorithm::tensor_core) << "a few rows";
    EXPECT_EQ(pick(32, 4096, Type::f16, Type::f16, true, true).tile.n, 128u) << "32 tiles: one for every eighth SM";
    EXPECT_EQ(pick(4096, 4096, Type::f16, Type::f16, true, false).algorithm, GemmAlgorithm::tensor_core);
    EXPECT_EQ(pick(4096, 4096, Type::f32, Type::f16, true, true).algorithm, GemmAlgorithm::tensor_core);
    // f32 stays exact on the CUDA cores unless the caller allows TF32; then b [n, k] runs on wgmma.
    EXPECT_EQ(pick(4096, 4096, Type::f32, Type::f32, true, true).algorithm, GemmAlgorithm::simt);
    auto const tf32 = [](bool b_transposed) {
        return choose_gemm_config(4096, 4096, 4096, Type::f32, Type::f32, b_transposed, true, 132, Target::sm_90, 1,
                                  true, true);
    };
    EXPECT_EQ(tf32(true).algorithm, GemmAlgorithm::wgmma);
    EXPECT_EQ(tf32(true).tile.k, 32u) << "a 128-byte row of f32";
    EXPECT_EQ(gemm_name(tf32(true)), "gemm_wgmma_tf32_tf32_nt_128x256x32_w12_s4_v_g8");
    EXPECT_EQ(tf32(false).algorithm, GemmAlgorithm::simt) << "tf32 wgmma reads b K-major only";
    EXPECT_EQ(
        choose_gemm_config(4096, 4096, 64, Type::f16, Type::f16, true, true, 132, Target::sm_90, 1, false).algorithm,
        GemmAlgorithm::tensor_core)
        << "no tensor maps without the driver's encoder";
    c = pick(4096, 4096, Type::f32, Type::f16, true, true);  // f32 a staged through registers: 8 warps
    EXPECT_EQ(c.algorithm, GemmAlgorithm::tensor_core);
    EXPECT_EQ(c.a, Type::f32);
    EXPECT_EQ(c.warps, 8u);
    c = pick(4096, 4096, Type::f16, Type::f16, true, false);
    EXPECT_EQ(c.warps, 8u);
    c = pick(33, 65, Type::f16, Type::f16, false, false);
    EXPECT_EQ(c.tile.m, 64u);
    EXPECT_EQ(pick(4096, 4096, Type::f16, Type::f16, true, true).m, 0u) << "sizes stay parameters";
    // Every pick is one of the listed variants.
    for (Target t : {Target::sm_80, Target::sm_90}) {
        std::set<std::string> listed;
        for (GemmConfig const& v : chosen_gemm_configs(t)) listed.insert(gemm_name(v));
        // Per type pair, layout, alignment and tile class; on sm_90 also the wgmma kernels (f16 and
        // bf16, both layouts of b, batched or not, 128 or 256 columns; tf32 with b [n, k]).
        EXPECT_EQ(listed.size(), 5u * 2u * 2u * 3u + (t == Target::sm_90 ? 2u * 2u * 2u * 2u + 2u * 2u : 0u));
        for (std::uint64_t m : {1u, 32u, 33u, 300u, 5000u})
            for (std::uint64_t n : {1u, 100u, 5000u})
                for (auto [a, b] : std::vector<std::pair<Type, Type>>{
                         {Type::f32, Type::f32}, {Type::f16, Type::f16}, {Type::f32, Type::bf16}})
                    for (bool bt : {false, true})
                        for (bool aligned : {false, true})
                            EXPECT_TRUE(listed.contains(gemm_name(pick(m, n, a, b, bt, aligned, t))))
                                << gemm_name(pick(m, n, a, b, bt, aligned, t)) << " for " << to_string(t);
    }
}

// ---- the code

TEST(PtxGemm, EmitsTheSimtKernelsInstructions) {
    std::string const nn = gemm({}).emit(Target::sm_90);
    EXPECT_TRUE(contains(nn,
                         ".param .u64 a,\n\t.param .u64 b,\n\t.param .u64 out,\n\t.param .u32 m,\n\t.param .u32 n,\n"
                         "\t.param .u32 k\n"));
    EXPECT_TRUE(contains(nn, ".maxntid 512, 1, 1")) << "ptxas budgets 128 registers";
    EXPECT_EQ(count(nn, "fma.rn.f32"), 64u * 8u * 3u) << "8x8 per thread, k step 8, unrolled over 3 stages";
    EXPECT_EQ(count(nn, "ld.shared.v4.f32"), 4u * 8u * 3u);
    EXPECT_TRUE(contains(nn, "cp.async.ca.shared.global")) << "a transposed by 4-byte copies";
    EXPECT_TRUE(contains(nn, "cp.async.cg.shared.global")) << "b in 16-byte copies";
    EXPECT_TRUE(contains(nn, "cp.async.wait_group 1;"));
    EXPECT_TRUE(contains(nn, "st.global.v4.f32"));
    std::string const elementwise = gemm({.b_transposed = true, .aligned = false}).emit(Target::sm_90);
    EXPECT_FALSE(contains(elementwise, "cp.async.cg")) << "no 16-byte copies";
    EXPECT_FALSE(contains(elementwise, "st.global.v4"));
}

TEST(PtxGemm, EmitsTheTensorCoreKernelsInstructions) {
    std::string const nt = gemm({.a = Type::bf16, .b = Type::bf16, .b_transposed = true}).emit(Target::sm_80);
    EXPECT_EQ(count(nt, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 4u * 8u * 2u * 4u)
        << "a 64x64 warp tile: 4x8 MMAs per 16 of k, 2 per k step, unrolled over 4 stages";
    EXPECT_TRUE(contains(nt, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
    EXPECT_FALSE(contains(nt, ".trans")) << "b as [n, k] needs no transposed loads";
    EXPECT_TRUE(contains(nt, "cp.async.cg.shared.global"));
    EXPECT_TRUE(contains(nt, "cp.async.wait_group 2;"));
    EXPECT_TRUE(contains(nt, "xor.b32")) << "swizzled shared memory";
    std::string const nn = gemm({.a = Type::f16, .b = Type::f16}).emit(Target::sm_90);
    EXPECT_TRUE(contains(nn, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    EXPECT_TRUE(contains(nn, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")) << "b as [k, n]";
    std::string const mixed = gemm({.a = Type::f32, .b = Type::bf16, .b_transposed = true}).emit(Target::sm_90);
    EXPECT_TRUE(contains(mixed, "cvt.rn.bf16x2.f32")) << "f32 a rounded to bf16 on the way in";
    EXPECT_TRUE(contains(mixed, "ld.global.nc.v4.f32"));
    std::string const elementwise = gemm({.a = Type::f16, .b = Type::f16, .aligned = false}).emit(Target::sm_90);
    EXPECT_FALSE(contains(elementwise, "cp.async")) << "unaligned rows go through registers";
    EXPECT_TRUE(contains(elementwise, "ld.global.nc.u16"));
    EXPECT_FALSE(contains(elementwise, "st.global.v2"));
}

TEST(PtxGemm, BakedSizesDropEdgeChecks) {
    std::string const open = gemm({.a = Type::f16, .b = Type::f16}).emit(Target::sm_90);
    std::string const baked =
        gemm({.m = 4096, .n = 4096, .k = 4096, .a = Type::f16, .b = Type::f16}).emit(Target::sm_90);
    EXPECT_TRUE(contains(open, "setp.lt.u32"));
    EXPECT_FALSE(contains(baked, "setp.lt.u32")) << "every tile is whole";
    EXPECT_FALSE(contains(baked, "selp.u64")) << "no zero-fill copies";
    EXPECT_TRUE(contains(baked, "mov.u32 %r") && contains(baked, ", 4096;"));
    std::string const partial =
        gemm({.m = 100, .n = 4096, .k = 4096, .a = Type::f16, .b = Type::f16}).emit(Target::sm_90);
    EXPECT_TRUE(contains(partial, "setp.lt.u32")) << "m = 100 leaves a partial tile";
}

TEST(PtxGemm, EveryChosenVariantEmitsForEveryTarget) {
    for (Target t : {Target::sm_80, Target::sm_86, Target::sm_89, Target::sm_90, Target::sm_90a})
        for (GemmConfig const& c : chosen_gemm_configs(t))
            EXPECT_NO_THROW((void)gemm(c).emit(emission_target(gemm(c), t))) << describe(c) << " for " << to_string(t);
}

// ---- ptxas

TEST(PtxGemm, EveryChosenVariantAssemblesForSm80AndSm90) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : {Target::sm_80, Target::sm_90})
        for (GemmConfig const& c : chosen_gemm_configs(t)) {
            SCOPED_TRACE(describe(c) + " " + std::string(to_string(t)));
            expect_assembles(gemm(c), emission_target(gemm(c), t));
        }
}

// Batched kernels (matmul of [..., m, k]·[..., k, n]): three more parameters, the product from
// %ctaid.y, and the tile choice counts the whole batch's tiles.
TEST(PtxGemm, BatchedVariantsAssembleAndReadTheProductFromTheGridsY) {
    GemmConfig const chosen =
        choose_gemm_config(512, 512, 128, Type::f16, Type::f16, false, true, 132, Target::sm_80, 32);
    EXPECT_TRUE(chosen.batched);
    EXPECT_EQ(chosen.tile.m, 128u) << "32 products of 16 tiles fill 132 SMs";
    EXPECT_FALSE(choose_gemm_config(512, 512, 128, Type::f16, Type::f16, false, true, 132, Target::sm_80).batched);
    EXPECT_NE(gemm_name(chosen).find("_batched"), std::string::npos);
    std::string const text = gemm(chosen).emit(Target::sm_80);
    EXPECT_NE(text.find("%ctaid.y"), std::string::npos);
    EXPECT_NE(text.find("out_batch"), std::string::npos);
    // On sm_90 the same batch has 32 · 16 tiles of 128x128: the persistent wgmma kernel walks them all.
    GemmConfig const hopper =
        choose_gemm_config(512, 512, 128, Type::f16, Type::f16, false, true, 132, Target::sm_90, 32);
    EXPECT_EQ(hopper.algorithm, GemmAlgorithm::wgmma);
    EXPECT_TRUE(hopper.batched);
    GemmLaunch const walk = gemm_launch(hopper, 512, 512, 32, 132);
    EXPECT_EQ(walk.grid, 132u);
    EXPECT_EQ(walk.grid_y, 1u);
    EXPECT_EQ(hopper.tile.n, 128u) << "256 tiles of 128x256: fewer than two an SM";
    EXPECT_EQ(gemm_launch(hopper, 512, 512, 2, 132).grid, 32u) << "no more blocks than tiles";
    std::string const persistent = gemm(hopper).emit(Target::sm_90a);
    EXPECT_EQ(persistent.find("%ctaid.y"), std::string::npos);
    EXPECT_NE(persistent.find(".param .u32 a_step"), std::string::npos);
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Type t : {Type::f32, Type::f16, Type::bf16})
        for (bool transposed : {false, true})
            for (bool aligned : {false, true}) {
                GemmConfig const c = choose_gemm_config(64, 64, 64, t, t, transposed, aligned, 132, Target::sm_80, 8);
                SCOPED_TRACE(describe(c));
                expect_assembles(gemm(c), Target::sm_80);
            }
}

// Hopper's kernel: tensor maps by value, one producer warpgroup of TMA copies, consumer warpgroups
// of wgmma over 128-byte swizzled slots, registers moved from the one to the others.
TEST(PtxGemm, WgmmaKernelIsWarpSpecialised) {
    GemmConfig const c{.a = Type::bf16, .b = Type::bf16, .algorithm = GemmAlgorithm::wgmma, .bias = true};
    EXPECT_EQ(gemm_name(c), "gemm_wgmma_bf16_bf16_nn_128x256x64_w12_s4_v_g8_bias");
    EXPECT_THROW((void)gemm(c).emit(Target::sm_90), BuildError) << "wgmma exists on sm_90a only";
    Kernel const kernel = gemm(c);
    EXPECT_TRUE(kernel.architecture_specific());
    EXPECT_EQ(emission_target(kernel, Target::sm_90), Target::sm_90a);
    EXPECT_EQ(emission_target(kernel, Target::sm_80), Target::sm_80);
    std::string const text = kernel.emit(Target::sm_90a);
    EXPECT_TRUE(
        contains(text, ".param .align 64 .b8 a_map[128],\n\t.param .align 64 .b8 b_map[128],\n\t.param .u64 out,"));
    EXPECT_TRUE(contains(text, ".maxntid 384, 1, 1\n.maxnreg 168"));
    EXPECT_TRUE(contains(text, "setmaxnreg.dec.sync.aligned.u32 40;"));
    EXPECT_TRUE(contains(text, "setmaxnreg.inc.sync.aligned.u32 232;"));
    EXPECT_EQ(count(text, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"), 4u) << "four k16 steps a slot";
    EXPECT_EQ(count(text, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"), 1u + 4u)
        << "a's tile, and b [k, n] in four 64-column boxes";
    EXPECT_TRUE(contains(text, ", 1, 1, 0, 1;")) << "b N-major";
    EXPECT_TRUE(contains(text, "wgmma.wait_group.sync.aligned 1;")) << "one group of MMAs in flight";
    Kernel const linear =
        gemm({.a = Type::f16, .b = Type::f16, .b_transposed = true, .algorithm = GemmAlgorithm::wgmma});
    std::string const nt = linear.emit(Target::sm_90a);
    EXPECT_EQ(count(nt, "cp.async.bulk.tensor.2d"), 2u);
    EXPECT_TRUE(contains(nt, ", 1, 1, 0, 0;")) << "b K-major";
    EXPECT_EQ(gemm_launch(c, 4096, 4096, 1, 132).shared_bytes, 4u * (128u + 256u) * 64u * 2u + 1024u + 64u);
    // f32 operands as tf32: k8 MMAs over 32 values a row, b [n, k] only.
    GemmConfig const tf32{.a = Type::f32, .b = Type::f32, .b_transposed = true, .algorithm = GemmAlgorithm::wgmma};
    std::string const tf = gemm(tf32).emit(Target::sm_90a);
    EXPECT_EQ(count(tf, "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32"), 4u);
    EXPECT_EQ(gemm_launch(tf32, 4096, 4096, 1, 132).shared_bytes, gemm_launch(c, 4096, 4096, 1, 132).shared_bytes);
    EXPECT_THROW((void)gemm_resolved({.a = Type::f32, .b = Type::f32, .algorithm = GemmAlgorithm::wgmma}), BuildError);

    // The maps: a [m, k] in boxes of 64 k × 128 rows; b as stored, 128-byte swizzle, batch dimension
    // of 1 where every product shares the matrix.
    GemmConfig batched = c;
    batched.batched = true;
    auto const maps = gemm_tensor_maps(batched, {.a = 0x1000,
                                                 .b = 0x2000,
                                                 .m = 300,
                                                 .n = 520,
                                                 .k = 72,
                                                 .batch = 5,
                                                 .a_batch_bytes = 300 * 72 * 2,
                                                 .b_batch_bytes = 0});
    EXPECT_EQ(maps[0].rank, 3u);
    EXPECT_EQ(maps[0].dims[0], 72u);
    EXPECT_EQ(maps[0].dims[1], 300u);
    EXPECT_EQ(maps[0].dims[2], 5u);
    EXPECT_EQ(maps[0].strides[1], 144u);
    EXPECT_EQ(maps[0].box[0], 64u);
    EXPECT_EQ(maps[0].box[1], 128u);
    EXPECT_EQ(maps[1].dims[0], 520u);
    EXPECT_EQ(maps[1].dims[2], 1u);
    EXPECT_EQ(maps[1].box[1], 64u);
    EXPECT_EQ(maps[1].swizzle, TensorMapSwizzle::swizzle_128b);
    EXPECT_THROW((void)gemm_tensor_maps({}, {}), BuildError) << "the SIMT kernel takes no maps";

    auto const rejects = [](GemmConfig const& bad) { EXPECT_THROW((void)gemm_resolved(bad), BuildError); };
    rejects({.a = Type::f32, .b = Type::f16, .algorithm = GemmAlgorithm::wgmma});
    rejects({.a = Type::f16, .b = Type::f16, .algorithm = GemmAlgorithm::wgmma, .aligned = false});
    rejects({.a = Type::f16, .b = Type::f16, .algorithm = GemmAlgorithm::wgmma, .tile = {96, 256, 64}});
    rejects({.a = Type::f16, .b = Type::f16, .algorithm = GemmAlgorithm::wgmma, .tile = {128, 256, 32}});
    rejects({.m = 128, .a = Type::f16, .b = Type::f16, .algorithm = GemmAlgorithm::wgmma});
    rejects({.a = Type::f16, .b = Type::f16, .algorithm = GemmAlgorithm::wgmma, .warps = 8});
}

// linear's bias in the epilogue: one more parameter, loaded once per column a thread stores.
TEST(PtxGemm, BiasVariantsAssemble) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (auto [a, b] :
         {std::pair{Type::f32, Type::f32}, std::pair{Type::f32, Type::f16}, std::pair{Type::f32, Type::bf16}})
        for (bool aligned : {false, true})
            for (std::uint64_t m : {8u, 4096u}) {
                GemmConfig c = choose_gemm_config(m, 4096, 4096, a, b, true, aligned, 132, Target::sm_90);
                c.bias = true;
                SCOPED_TRACE(describe(c));
                EXPECT_NE(gemm_name(c).find("_bias"), std::string::npos);
                expect_assembles(gemm(c), Target::sm_90);
            }
}

// Larger tiles and deeper k steps a caller may ask for (and the README's example) assemble too.
TEST(PtxGemm, AlternativeTilesAssemble) {
    RAYO_SKIP_WITHOUT_PTXAS();
    std::vector<GemmConfig> const alternatives{
        {.a = Type::bf16, .b = Type::bf16, .b_transposed = true, .tile = {128, 256, 32}, .warps = 8, .stages = 3},
        {.a = Type::f16, .b = Type::f16, .tile = {128, 128, 64}, .warps = 4, .stages = 3},
        {.a = Type::f16, .b = Type::f16, .b_transposed = true, .tile = {64, 64, 16}, .warps = 2, .stages = 2},
        {.m = 4096, .n = 4096, .k = 4096, .a = Type::bf16, .b = Type::bf16, .b_transposed = true},
        {.tile = {64, 128, 8}, .stages = 2},
        {.tile = {128, 128, 32}},
    };
    for (GemmConfig const& c : alternatives)
        for (Target t : {Target::sm_80, Target::sm_90}) {
            SCOPED_TRACE(describe(c) + " " + std::string(to_string(t)));
            expect_assembles(gemm(c), t);
        }
}

// The main (aligned) variants do not spill; the 128x128 SIMT kernel fits 128 registers (two blocks
// per SM). The exception is sm_90's 128x128x16 SIMT tile: ptxas spills a few words of it (40 bytes
// stored, 60 loaded), and it still measured 6% faster than the spill-free 128x128x8 on an H100, so
// it may spill that little and no more.
TEST(PtxGemm, MainVariantsDoNotSpill) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : {Target::sm_80, Target::sm_90})
        for (GemmConfig const& c : chosen_gemm_configs(t)) {
            if (!c.aligned) continue;
            SCOPED_TRACE(describe(c) + " " + std::string(to_string(t)));
            PtxasUsage const usage = ptxas_usage(gemm(c), emission_target(gemm(c), t));
            ASSERT_GE(usage.registers, 0) << usage.log;
            int const allowed = c.algorithm == GemmAlgorithm::simt && c.tile.k == 16 ? 64 : 0;
            EXPECT_LE(usage.spill_stores, allowed) << usage.log;
            EXPECT_LE(usage.spill_loads, allowed) << usage.log;
            if (c.algorithm == GemmAlgorithm::simt && c.warps == 8) {
                EXPECT_LE(usage.registers, 128) << usage.log;
            }
        }
}

}  // namespace
}  // namespace rayo::test
