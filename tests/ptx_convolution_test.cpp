// The conv2d generators: the implicit GEMM's configuration checks, names and launch shapes, the
// instructions it is made of, and every variant of it and of the direct kernel assembled by ptxas
// for sm_80 and sm_90, the implicit GEMM's without spills.
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/convolution.hpp>

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

bool contains(std::string const& text, std::string const& piece) { return text.find(piece) != std::string::npos; }

// ptxas -v's spill bytes (stores + loads) of a kernel, -1 when it fails.
int spill_bytes(Kernel const& kernel, Target target, std::string& log) {
    namespace fs = std::filesystem;
    fs::path const dir = fs::path(RAYO_PTX_TEST_DIR);
    fs::create_directories(dir);
    std::string const stem = kernel.name() + "." + ptxas_arch(target) + ".usage";
    fs::path const source = dir / (stem + ".ptx"), log_path = dir / (stem + ".log");
    std::ofstream(source) << kernel.emit(target);
    std::string const command = "'" + ptxas_path() + "' -v -arch=" + ptxas_arch(target) + " '" + source.string() +
                                "' -o /dev/null > '" + log_path.string() + "' 2>&1";
    int const status = std::system(command.c_str());
    std::stringstream text;
    text << std::ifstream(log_path).rdbuf();
    log = text.str();
    std::smatch match;
    if (status != 0 ||
        !std::regex_search(log, match, std::regex(R"((\d+) bytes spill stores, (\d+) bytes spill loads)")))
        return -1;
    return std::stoi(match[1]) + std::stoi(match[2]);
}

TEST(PtxConvolution, RejectsConfigsItCannotBuild) {
    EXPECT_THROW((void)conv2d_gemm({.element = DType::f32}), BuildError);
    EXPECT_THROW((void)conv2d_gemm({.tile_m = 32}), BuildError);
    EXPECT_THROW((void)conv2d_gemm({.tile_n = 256}), BuildError);
    EXPECT_THROW((void)conv2d_gemm({.stages = 5}), BuildError);
    EXPECT_THROW((void)conv2d_gemm_launch({}, 1, 1, 9, 1u << 16), BuildError);  // more groups than grid.y holds
}

TEST(PtxConvolution, NamesSpellEveryParameter) {
    EXPECT_EQ(conv2d_gemm_name({}), "rayo_conv2d_gemm_f16_128x128_s4");
    EXPECT_EQ(conv2d_gemm_name({.element = DType::bf16,
                                .flip = true,
                                .bias = true,
                                .aligned = false,
                                .paired_stores = true,
                                .tile_m = 64,
                                .tile_n = 64,
                                .stages = 3}),
              "rayo_conv2d_gemm_bf16_64x64_s3_e_pairs_flip_bias");
    std::set<std::string> names;
    for (Conv2dGemmConfig const& c : conv2d_gemm_configs()) names.insert(conv2d_gemm_name(c));
    EXPECT_EQ(names.size(), conv2d_gemm_configs().size());
}

TEST(PtxConvolution, LaunchShapes) {
    // ResNet-50's 3x3 64->64 at 56x56, batch 32: 64-channel tiles, 128-pixel tiles, 4 warps.
    Conv2dGemmLaunch const l = conv2d_gemm_launch({.tile_m = 64}, 32 * 56 * 56, 64, 64 * 9, 1);
    EXPECT_EQ(l.grid_x, 1u * (32 * 56 * 56 / 128));
    EXPECT_EQ(l.grid_y, 1u);
    EXPECT_EQ(l.threads, 128u);
    EXPECT_EQ(l.shared_bytes, 4u * (64 + 128) * 32 * 2 + 576 * 8);  // stages, and the k table
    // 128-channel tiles take 8 warps; groups go along y; the k table is padded to whole k steps.
    Conv2dGemmLaunch const g = conv2d_gemm_launch({.tile_m = 128, .stages = 2}, 100, 130, 20, 3);
    EXPECT_EQ(g.grid_x, 2u * 1u);
    EXPECT_EQ(g.grid_y, 3u);
    EXPECT_EQ(g.threads, 256u);
    EXPECT_EQ(g.shared_bytes, 2u * (128 + 128) * 32 * 2 + 32 * 8);
}

TEST(PtxConvolution, EmitsTheImplicitGemmsInstructions) {
    std::string const aligned = conv2d_gemm({.bias = true, .paired_stores = true}).emit(Target::sm_80);
    EXPECT_TRUE(contains(aligned, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    EXPECT_TRUE(contains(aligned, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));  // the gathered [k, p] tile
    EXPECT_TRUE(contains(aligned, "cp.async.cg.shared.global"));                       // the weights
    EXPECT_TRUE(contains(aligned, "ld.global.nc.u16"));                                // the gather
    EXPECT_TRUE(contains(aligned, "st.global.b32"));                                   // paired stores
    std::string const elementwise = conv2d_gemm({.element = DType::bf16, .aligned = false}).emit(Target::sm_80);
    EXPECT_TRUE(contains(elementwise, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
    EXPECT_FALSE(contains(elementwise, "cp.async"));
    EXPECT_TRUE(contains(elementwise, "st.global.b16"));
}

// ---- ptxas

TEST(PtxConvolution, EveryVariantAssemblesForSm80AndSm90) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : {Target::sm_80, Target::sm_90}) {
        for (Conv2dGemmConfig const& c : conv2d_gemm_configs()) {
            SCOPED_TRACE(conv2d_gemm_name(c) + " " + std::string(to_string(t)));
            expect_assembles(conv2d_gemm(c), t);
        }
        for (DType e : {DType::f32, DType::f16, DType::bf16})
            for (bool flip : {false, true})
                for (bool bias : {false, true}) {
                    Kernel const k = conv2d_direct({.element = e, .flip = flip, .bias = bias});
                    SCOPED_TRACE(k.name() + " " + std::string(to_string(t)));
                    expect_assembles(k, t);
                }
    }
}

TEST(PtxConvolution, ImplicitGemmDoesNotSpill) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : {Target::sm_80, Target::sm_90})
        for (unsigned tile_m : {64u, 128u})
            for (bool aligned : {true, false}) {
                Conv2dGemmConfig const c{.bias = true, .aligned = aligned, .paired_stores = true, .tile_m = tile_m};
                SCOPED_TRACE(conv2d_gemm_name(c) + " " + std::string(to_string(t)));
                std::string log;
                EXPECT_EQ(spill_bytes(conv2d_gemm(c), t, log), 0) << log;
            }
}

}  // namespace
}  // namespace rayo::test
