// The Vulkan backend's GEMMs along the paths the harness (tests/ops/) does not choose by itself:
// f16 read through packed words where the device has 16-bit storage; the cooperative-matrix GEMM
// (f16 x f16, and linear's f32 x with f16 weights, on devices with VK_NV_cooperative_matrix or
// VK_KHR_cooperative_matrix; lavapipe has neither, NVIDIA's driver both) over whole 128x128 tiles,
// edges in m, n and k, 16-byte and element-by-element loads (k or a view offset not a multiple of
// 8) and many steps along k. Values against the harness's float64 product and tolerances.
//
// The f32 x f32 SGEMM (shaders/matmul_f32_large.comp) is taken automatically only by shapes too
// large for lavapipe, so its tests force each tile of the host's table through the hook below
// (as RAYO_VULKAN_GEMM_TILE would): shapes that are multiples of every tile and shapes with edges
// in m, n and k, both layouts of b, vec4 and scalar global accesses (row strides and view offsets
// that are and are not multiples of 4 floats), with poison around the output to catch stray stores.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <type_traits>

#include "ops/references.hpp"
#include "ops/tolerances.hpp"
#include "support/vulkan_support.hpp"

namespace rayo::test {
namespace {

struct Dims {
    std::size_t m, n, k;
};

template <class T>
std::vector<T> convert(std::vector<float> const& v) {
    return std::vector<T>(v.begin(), v.end());
}

template <class T>
std::vector<double> as_double(std::vector<T> const& v) {
    std::vector<double> d;
    d.reserve(v.size());
    for (auto x : v) d.push_back(static_cast<double>(static_cast<float>(x)));
    return d;
}

// got against the float64 product of a[m, k] and b ([k, n], or [n, k] when b_t) under the harness's
// tolerance of `op` at `dtype` on Vulkan. Returns the failures.
std::size_t gemm_failures(std::vector<float> const& got, std::vector<double> const& a, std::vector<double> const& b,
                          Dims d, bool b_t, Op op = Op::matmul, DType dtype = DType::f32) {
    ops::Tolerance const t = ops::tolerance(op, dtype, DeviceKind::vulkan);
    ops::ProductReference const want = ops::product_ref(a, b, d.m, d.n, d.k, b_t);
    double const root_k = std::sqrt(static_cast<double>(std::max<std::size_t>(d.k, 1)));
    std::size_t failures = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double const bound = t.rel * root_k * want.magnitude[i] + t.rounding * want.magnitude[i] + 1e-30;
        if (!(std::abs(got[i] - want.value[i]) <= bound) && failures++ < 5)
            ADD_FAILURE() << "C(" << i / d.n << ", " << i % d.n << "): got " << got[i] << ", want " << want.value[i];
    }
    return failures;
}

class VulkanMatmul : public VulkanTest {
protected:
    // matmul of T operands and linear with T weights over a few shapes.
    template <class T>
    void run_all() {
        reset_stats();
        for (Dims d : {Dims{1, 1, 1}, Dims{7, 5, 3}, Dims{33, 65, 17}, Dims{128, 128, 128}, Dims{257, 129, 300}}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " seed " +
                         std::to_string(seed));
            auto const av = convert<T>(random_floats(d.m * d.k, seed, -1.0f, 1.0f));
            auto const bv = convert<T>(random_floats(d.k * d.n, seed + 1, -1.0f, 1.0f));
            auto out = poisoned({d.m, d.n}, device);
            matmul_into(Tensor<T>::from(av, {d.m, d.k}, device), Tensor<T>::from(bv, {d.k, d.n}, device), out);
            EXPECT_EQ(gemm_failures(out.to_vector(), as_double(av), as_double(bv), d, false, Op::matmul, dtype_of<T>),
                      0u);
            auto const xv = random_floats(d.m * d.k, seed + 2, -1.0f, 1.0f);
            auto const wv = convert<T>(random_floats(d.n * d.k, seed + 3, -1.0f, 1.0f));
            auto y = poisoned({d.m, d.n}, device);
            linear_into(Tensor<float>::from(xv, {d.m, d.k}, device), Tensor<T>::from(wv, {d.n, d.k}, device), y);
            EXPECT_EQ(gemm_failures(y.to_vector(), as_double(xv), as_double(wv), d, true, Op::linear, dtype_of<T>), 0u);
        }
        EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
    }
};

// The values v[offset..] of a tensor made of v on the device, as a [rows, cols] view `offset`
// elements in.
template <class T>
Tensor<T> view_at(std::vector<T> const& v, std::size_t offset, std::size_t rows, std::size_t cols, Device device) {
    auto const n = static_cast<std::int64_t>(v.size());
    return Tensor<T>::from(v, {v.size()}, device).slice(static_cast<std::int64_t>(offset), n).reshape({rows, cols});
}

// matmul of f16 operands (b_t false) or linear with f32 x and f16 weights (b_t true) over shapes of
// several workgroup tiles and many steps along k, with edges, on views whose offsets are and are
// not multiples of 8 elements (16-byte loads need multiples of 8 halves, or 4 floats). 300x260x1024
// mixes workgroups wholly inside the matrices, which the cooperative-matrix GEMM loads without
// bounds checks, with edge ones in one dispatch; k = 1000 keeps every workgroup on the checked loads.
template <class A>
void check_across_tiles_and_view_offsets(Device device, bool b_t) {
    reset_stats();
    for (std::size_t offset : {0, 8, 3})
        for (Dims d : {Dims{256, 384, 1024}, Dims{300, 260, 1024}, Dims{300, 260, 1000}}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " offset " +
                         std::to_string(offset) + " seed " + std::to_string(seed));
            auto const av = convert<A>(random_floats(offset + d.m * d.k, seed, -1.0f, 1.0f));
            auto const bv = convert<half>(random_floats(offset + d.k * d.n, seed + 1, -1.0f, 1.0f));
            auto const a = view_at(av, offset, d.m, d.k, device);
            auto const b = b_t ? view_at(bv, offset, d.n, d.k, device) : view_at(bv, offset, d.k, d.n, device);
            auto out = poisoned({d.m, d.n}, device);
            if constexpr (std::is_same_v<A, float>)
                linear_into(a, b, out);
            else
                matmul_into(a, b, out);
            std::vector<A> const a_used(av.begin() + static_cast<std::ptrdiff_t>(offset), av.end());
            std::vector<half> const b_used(bv.begin() + static_cast<std::ptrdiff_t>(offset), bv.end());
            EXPECT_EQ(gemm_failures(out.to_vector(), as_double(a_used), as_double(b_used), d, b_t,
                                    b_t ? Op::linear : Op::matmul, DType::f16),
                      0u);
        }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(VulkanMatmul, F16AcrossTilesAndViewOffsets) { check_across_tiles_and_view_offsets<half>(device, false); }

TEST_F(VulkanMatmul, LinearF16AcrossTilesAndViewOffsets) { check_across_tiles_and_view_offsets<float>(device, true); }

TEST_F(VulkanMatmul, F16ThroughPackedWords) {
    vulkan::use_matmul_features(device, false, false);
    run_all<half>();
    vulkan::use_matmul_features(device, true, true);
}

// Forces one GEMM tile for a scope; restores the default choice at its end.
class ForcedGemmTile {
public:
    explicit ForcedGemmTile(std::string_view tile) { vulkan::use_gemm_tile(tile); }
    ~ForcedGemmTile() { vulkan::use_gemm_tile(""); }
    ForcedGemmTile(ForcedGemmTile const&) = delete;
    ForcedGemmTile& operator=(ForcedGemmTile const&) = delete;
};

class VulkanMatmulF32 : public VulkanMatmul {
protected:
    // a[m, k] · op(b) (b_t: linear with b stored [n, k]) with a, b and out each a view `offset`
    // floats into a larger buffer that extends 5 floats past the view: random values in the views,
    // NaN around them (poison for out). Checks the product, that the poison around out survives, and returns what ran.
    std::string run_f32(Dims d, bool b_t, std::size_t offset = 0) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) +
                     (b_t ? " b[n, k]" : " b[k, n]") + " offset " + std::to_string(offset) + " seed " +
                     std::to_string(seed));
        constexpr std::size_t tail = 5;
        auto view = [&](Tensor<float> const& whole, std::size_t rows, std::size_t cols) {
            return whole.slice(static_cast<std::int64_t>(offset), static_cast<std::int64_t>(offset + rows * cols))
                .reshape({rows, cols});
        };
        // NaN around the operands' views: a read outside them (even one multiplied by a staged 0)
        // shows in the result.
        auto with_nan_pads = [&](std::vector<float> v) {
            std::fill(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(offset),
                      std::numeric_limits<float>::quiet_NaN());
            std::fill(v.end() - tail, v.end(), std::numeric_limits<float>::quiet_NaN());
            return v;
        };
        auto const av = with_nan_pads(random_floats(offset + d.m * d.k + tail, seed, -1.0f, 1.0f));
        auto const bv = with_nan_pads(random_floats(offset + d.k * d.n + tail, seed + 1, -1.0f, 1.0f));
        auto const a_whole = Tensor<float>::from(av, {av.size()}, device);
        auto const b_whole = Tensor<float>::from(bv, {bv.size()}, device);
        auto const out_whole = poisoned({offset + d.m * d.n + tail}, device);
        auto const a = view(a_whole, d.m, d.k);
        auto const out = view(out_whole, d.m, d.n);
        if (b_t)
            linear_into(a, view(b_whole, d.n, d.k), out);
        else
            matmul_into(a, view(b_whole, d.k, d.n), out);
        std::string const ran = vulkan::last_gemm_tile();

        auto const got = out_whole.to_vector();
        auto const ad = as_double(av), bd = as_double(bv);
        std::vector<double> const a_ref(ad.begin() + offset, ad.begin() + offset + d.m * d.k);
        std::vector<double> const b_ref(bd.begin() + offset, bd.begin() + offset + d.k * d.n);
        std::vector<float> const c(got.begin() + offset, got.begin() + offset + d.m * d.n);
        EXPECT_EQ(gemm_failures(c, a_ref, b_ref, d, b_t), 0u) << ran;
        for (std::size_t i = 0; i < got.size(); ++i)
            if (i < offset || i >= offset + d.m * d.n) {
                EXPECT_EQ(got[i], poison) << "stray store at " << i << " (" << ran << ")";
            }
        return ran;
    }
};

TEST_F(VulkanMatmulF32, EveryTileMultiplesAndEdges) {
    reset_stats();
    auto const tiles = vulkan::gemm_tile_names();
    ASSERT_GE(tiles.size(), 2u);
    for (std::string const& tile : tiles) {
        SCOPED_TRACE("tile " + tile);
        ForcedGemmTile const forced(tile);
        bool const tiled = tile == "tiled";
        // A multiple of every tile (64 and 128 along m and n, 16 along k): vec4 everywhere.
        for (bool b_t : {false, true}) {
            std::string const ran = run_f32({256, 256, 64}, b_t);
            EXPECT_EQ(ran, tiled ? tile : tile + " a:vec4 b:vec4 out:vec4");
        }
        // Edges in m, n and k with rows of whole vec4: vec4 loads, guarded by tile.
        for (bool b_t : {false, true}) {
            std::string const ran = run_f32({130, 196, 36}, b_t);
            EXPECT_EQ(ran, tiled ? tile : tile + " a:vec4 b:vec4 out:vec4");
        }
        // Edges in m, n and k, odd strides: scalar loads and stores.
        for (bool b_t : {false, true}) {
            std::string const ran = run_f32({257, 383, 129}, b_t);
            EXPECT_EQ(ran, tiled ? tile : tile + " a:scalar b:scalar out:scalar");
        }
        // b[k, n] with n a multiple of 4 but k not: only a's loads are scalar.
        EXPECT_EQ(run_f32({67, 132, 21}, false), tiled ? tile : tile + " a:scalar b:vec4 out:vec4");
        // Fewer rows and columns than one tile, k = 0 (no step along k: zeros).
        for (bool b_t : {false, true}) run_f32({5, 9, 0}, b_t);
        for (bool b_t : {false, true}) run_f32({1, 3, 300}, b_t);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

TEST_F(VulkanMatmulF32, ViewsAtOffsets) {
    // A view's offset decides vec4 or scalar access as much as its row stride: whole vec4 at 4
    // floats in, scalars (the alignment fallback) at 1 and 2.
    ForcedGemmTile const forced(vulkan::gemm_tile_names().front());
    for (bool b_t : {false, true}) {
        std::string const tile = vulkan::gemm_tile_names().front();
        EXPECT_EQ(run_f32({130, 132, 36}, b_t, 4), tile + " a:vec4 b:vec4 out:vec4");
        EXPECT_EQ(run_f32({130, 132, 36}, b_t, 1), tile + " a:scalar b:scalar out:scalar");
        EXPECT_EQ(run_f32({70, 68, 40}, b_t, 2), tile + " a:scalar b:scalar out:scalar");
    }
}

TEST_F(VulkanMatmulF32, LargeShapesTakeTheLargeTiles) {
    if (char const* env = std::getenv("RAYO_VULKAN_GEMM_TILE"); env && *env)
        GTEST_SKIP() << "RAYO_VULKAN_GEMM_TILE is set; it overrides the choice tested here";
    vulkan::use_gemm_tile("");
    // Enough 128-wide tiles to fill a large GPU (k kept small for lavapipe).
    EXPECT_NE(run_f32({2048, 1024, 4}, false), "tiled");
    EXPECT_NE(run_f32({1024, 2048, 4}, true), "tiled");
    // Too few: the 64x64 tiles of the old shader spread wider.
    EXPECT_EQ(run_f32({128, 128, 64}, false), "tiled");
}

TEST_F(VulkanMatmulF32, InvalidTileNamesAreRejected) {
    for (std::string_view bad :
         {"128x128", "128x128x8x1", "256x256x8", "128X128X8", " 128x128x8", "64x64x32", "fast"}) {
        try {
            vulkan::use_gemm_tile(bad);
            ADD_FAILURE() << "'" << bad << "' was accepted";
        } catch (Error const& e) {
            EXPECT_NE(std::string(e.what()).find("128x128x8"), std::string::npos)
                << "names the valid values: " << e.what();
        }
    }
    vulkan::use_gemm_tile("");
}

}  // namespace
}  // namespace rayo::test
