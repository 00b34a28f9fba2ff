// softmax, log_softmax, layer_norm and rms_norm on the Vulkan device against float64 references:
// fresh random data, poisoned outputs, rows short and long (1x1 to 4096x4096, 1x100000,
// 100000x8), gamma/beta present and absent, -inf/NaN rows as on the CPU, both reduction paths.
// Tolerances (|got - want|): softmax 1e-6·want (exp's 4 ulp plus the scaling); log_softmax
// 2e-6·(|want| + 1); norms 4e-6·(|n·gamma| + |beta|) + 1e-6, n the normalised value (a few
// ulp of the terms before beta is added).
//
// The shapes and views below also reach each form of the row shader (vulkan_rows.cpp): one
// invocation per row (up to 64 columns), the row held in registers (up to 16 elements on each of
// at most 512 invocations: 8192 columns on lavapipe and NVIDIA), with vec4 accesses only where the
// row length and every view offset are multiples of 4, and the multi-pass form beyond that.
#include "support/vulkan_support.hpp"
#include "support/row_references.hpp"

namespace rayo::test {
namespace {

struct RowShape {
    std::size_t rows, cols;
};
std::vector<RowShape> const row_shapes{{1, 1}, {3, 7}, {64, 1000}, {4096, 4096}, {1, 100000}, {100000, 8}, {5, 257}};

using VulkanRows = VulkanTest;

TEST_F(VulkanRows, SoftmaxAndLogSoftmax) {
    on_every_path([&] {
        for (auto [rows, cols] : row_shapes) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", seed " + std::to_string(seed));
            auto const v = random_floats(rows * cols, seed, -8.0f, 8.0f);
            auto x = Tensor<float>::from(v, {rows, cols}, device);
            auto p = poisoned({rows, cols}, device), lp = poisoned({rows, cols}, device);
            reset_stats();
            softmax(x, -1, p);
            log_softmax(x, -1, lp);
            auto const pv = p.to_vector(), lpv = lp.to_vector();
            EXPECT_EQ(stats().cpu_fallbacks, 0u);
            for (std::size_t r = 0; r < rows; ++r) {
                float const* row = v.data() + r * cols;
                double const m = *std::max_element(row, row + cols);
                double s = 0;
                for (std::size_t i = 0; i < cols; ++i) s += std::exp(row[i] - m);
                double const lse = std::log(s);
                for (std::size_t i = 0; i < cols; ++i) {
                    double const want_log = (row[i] - m) - lse, want = std::exp(want_log);
                    ASSERT_NEAR(pv[r * cols + i], want, 1e-6 * want) << r << ", " << i;
                    ASSERT_NEAR(lpv[r * cols + i], want_log, 2e-6 * (std::abs(want_log) + 1)) << r << ", " << i;
                }
            }
        }
    });
}

TEST_F(VulkanRows, InfinityAndNanRowsFollowTheCpu) {
    float const inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::size_t const cols = 300;
    auto v = random_floats(6 * cols, fresh_seed());
    for (std::size_t i = 0; i < cols; ++i) v[i] = -inf;                  // row 0: all -inf
    for (std::size_t i = 0; i < cols; i += 2) v[cols + i] = -inf;        // row 1: half -inf
    v[2 * cols + 17] = nan;                                              // row 2: one NaN
    v[3 * cols + 5] = inf;                                               // row 3: +inf
    v[4 * cols + 9] = 1e30f;                                             // row 4: huge values
    v[4 * cols + 10] = -1e30f;
    auto x = Tensor<float>::from(v, {6, cols}, device);
    auto xc = x.to(Device::cpu());
    on_every_path([&] {
        reset_stats();
        std::vector<std::pair<std::vector<float>, std::vector<float>>> const results{
            {softmax(x).to_vector(), softmax(xc).to_vector()},
            {log_softmax(x).to_vector(), log_softmax(xc).to_vector()},
            {layer_norm(x).to_vector(), layer_norm(xc).to_vector()},
            {rms_norm(x).to_vector(), rms_norm(xc).to_vector()}};
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
        for (std::size_t k = 0; k < results.size(); ++k) {
            auto const& [got, want] = results[k];
            for (std::size_t i = 0; i < got.size(); ++i) {
                SCOPED_TRACE("op " + std::to_string(k) + ", element " + std::to_string(i));
                if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << got[i];
                else if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]);
                else EXPECT_NEAR(got[i], want[i], 4e-6 * (std::abs(want[i]) + 1));
            }
        }
    });
}

TEST_F(VulkanRows, LayerNormAndRmsNorm) {
    on_every_path([&] {
        for (auto [rows, cols] : row_shapes) {
            for (bool affine : {false, true}) {
                auto const seed = fresh_seed();
                SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + (affine ? " with" : " without") +
                             " gamma/beta, seed " + std::to_string(seed));
                // An offset mean (3) checks the centring; the CPU's eps defaults.
                auto const v = random_floats(rows * cols, seed, -1.0f, 7.0f);
                auto const gv = random_floats(cols, seed + 1, -2.0f, 2.0f), bv = random_floats(cols, seed + 2);
                auto x = Tensor<float>::from(v, {rows, cols}, device);
                auto g = Tensor<float>::from(gv, {cols}, device), b = Tensor<float>::from(bv, {cols}, device);
                auto ln = poisoned({rows, cols}, device), rn = poisoned({rows, cols}, device);
                float const ln_eps = 1e-5f, rn_eps = 1e-6f;
                reset_stats();
                if (affine) {
                    layer_norm(x, g, b, ln_eps, ln);
                    rms_norm(x, g, rn_eps, rn);
                } else {
                    layer_norm(x, ln_eps, ln);
                    rms_norm(x, rn_eps, rn);
                }
                auto const lnv = ln.to_vector(), rnv = rn.to_vector();
                EXPECT_EQ(stats().cpu_fallbacks, 0u);
                for (std::size_t r = 0; r < rows; ++r) {
                    float const* row = v.data() + r * cols;
                    double mean = 0, sq = 0, var = 0;
                    for (std::size_t i = 0; i < cols; ++i) mean += row[i], sq += double(row[i]) * row[i];
                    mean /= double(cols);
                    for (std::size_t i = 0; i < cols; ++i) var += (row[i] - mean) * (row[i] - mean);
                    var /= double(cols);
                    double const rstd = 1.0 / std::sqrt(var + ln_eps), rs = 1.0 / std::sqrt(sq / double(cols) + rn_eps);
                    for (std::size_t i = 0; i < cols; ++i) {
                        double const gi = affine ? gv[i] : 1.0, bi = affine ? bv[i] : 0.0;
                        double const n = (row[i] - mean) * rstd, want = n * gi + bi;
                        ASSERT_NEAR(lnv[r * cols + i], want, 4e-6 * (std::abs(n * gi) + std::abs(bi)) + 1e-6) << r << ", " << i;
                        double const want_rms = row[i] * rs * gi;
                        ASSERT_NEAR(rnv[r * cols + i], want_rms, 4e-6 * std::abs(want_rms) + 1e-6) << r << ", " << i;
                    }
                }
            }
        }
    });
}

enum class RowOp { softmax, log_softmax, layer_norm, rms_norm };

char const* name(RowOp op) {
    switch (op) {
        case RowOp::softmax: return "softmax";
        case RowOp::log_softmax: return "log_softmax";
        case RowOp::layer_norm: return "layer_norm";
        case RowOp::rms_norm: return "rms_norm";
    }
    return "?";
}

constexpr RowOp all_row_ops[] = {RowOp::softmax, RowOp::log_softmax, RowOp::layer_norm, RowOp::rms_norm};
constexpr float layer_norm_eps = 1e-5f, rms_norm_eps = 1e-6f;

// Runs op on x into out (gamma and beta where the op takes them, may be null).
void run(RowOp op, Tensor<float> const& x, Tensor<float> const* gamma, Tensor<float> const* beta, Tensor<float> const& out) {
    switch (op) {
        case RowOp::softmax: softmax(x, -1, out); break;
        case RowOp::log_softmax: log_softmax(x, -1, out); break;
        case RowOp::layer_norm:
            if (gamma) layer_norm(x, *gamma, *beta, layer_norm_eps, out);
            else layer_norm(x, layer_norm_eps, out);
            break;
        case RowOp::rms_norm:
            if (gamma) rms_norm(x, *gamma, rms_norm_eps, out);
            else rms_norm(x, rms_norm_eps, out);
            break;
    }
}

// How many elements of got miss the float64 reference of op on v (rows of cols) by more than the
// tolerances stated at the top; `first` describes the first of them.
std::size_t row_op_errors(RowOp op, std::vector<float> const& v, std::size_t cols, std::vector<float> const& got,
                          std::vector<float> const* gamma, std::vector<float> const* beta, std::string& first) {
    bool const layer = op == RowOp::layer_norm;
    bool const norm = layer || op == RowOp::rms_norm;
    auto const want = norm ? norm_ref(v, cols, layer, gamma, layer ? beta : nullptr, layer ? layer_norm_eps : rms_norm_eps)
                           : softmax_ref(v, cols, op == RowOp::log_softmax);
    // The normalised values alone, for the norms' tolerance.
    auto const normalised = norm ? norm_ref(v, cols, layer, nullptr, nullptr, layer ? layer_norm_eps : rms_norm_eps)
                                 : std::vector<double>{};
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        double tol = 0;
        switch (op) {
            case RowOp::softmax: tol = 1e-6 * want[i]; break;
            case RowOp::log_softmax: tol = 2e-6 * (std::abs(want[i]) + 1); break;
            case RowOp::layer_norm: {
                double const g = gamma ? (*gamma)[i % cols] : 1.0, b = beta ? (*beta)[i % cols] : 0.0;
                tol = 4e-6 * (std::abs(normalised[i] * g) + std::abs(b)) + 1e-6;
                break;
            }
            case RowOp::rms_norm: tol = 4e-6 * std::abs(want[i]) + 1e-6; break;
        }
        if (!(std::abs(got[i] - want[i]) <= tol)) {
            if (bad++ == 0)
                first = std::string(name(op)) + " row " + std::to_string(i / cols) + ", column " + std::to_string(i % cols) +
                        ": got " + std::to_string(got[i]) + ", want " + std::to_string(want[i]);
        }
    }
    return bad;
}

// Row lengths on each side of every switch between the shader's forms and workgroup sizes (64:
// last per-invocation row; 8192: the register bound on devices with 512-invocation workgroups),
// lengths not a multiple of 4 (the scalar register path), and more rows than one dispatch has
// workgroups (the workgroups stride over the rows).
TEST_F(VulkanRows, EveryFormAroundItsBounds) {
    std::vector<RowShape> const shapes{{7, 64},   {5, 65},   {9, 100},  {3, 257},  {11, 1001}, {6, 4096}, {3, 4095},
                                       {2, 6000}, {2, 8188}, {3, 8191}, {2, 8192}, {3, 8193},  {2, 8196}, {65537, 67},
                                       {66001, 72}};
    on_every_path([&] {
        for (auto [rows, cols] : shapes) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", seed " + std::to_string(seed));
            auto const v = random_floats(rows * cols, seed, -6.0f, 9.0f);
            auto const gv = random_floats(cols, seed + 1, -2.0f, 2.0f), bv = random_floats(cols, seed + 2);
            auto x = Tensor<float>::from(v, {rows, cols}, device);
            auto g = Tensor<float>::from(gv, {cols}, device), b = Tensor<float>::from(bv, {cols}, device);
            for (RowOp op : all_row_ops) {
                for (bool affine : {false, true}) {
                    if (affine && (op == RowOp::softmax || op == RowOp::log_softmax)) continue;
                    // The row loop does not depend on the op: two of them over many rows keep the test short.
                    if (rows > 65535 && !(op == RowOp::softmax || (op == RowOp::layer_norm && affine))) continue;
                    SCOPED_TRACE(std::string(name(op)) + (affine ? " with gamma/beta" : ""));
                    auto out = poisoned({rows, cols}, device);
                    reset_stats();
                    run(op, x, affine ? &g : nullptr, affine ? &b : nullptr, out);
                    auto const got = out.to_vector();
                    EXPECT_EQ(stats().cpu_fallbacks, 0u);
                    std::string first;
                    EXPECT_EQ(row_op_errors(op, v, cols, got, affine ? &gv : nullptr, affine ? &bv : nullptr, first), 0u)
                        << first;
                }
            }
        }
    });
}

// x, out, gamma and beta as views at element offsets that are and are not multiples of 4 (the
// vec4 and scalar forms of the register path, and the multi-pass form), checked against the
// references; nothing outside out's view is written. Also in place (out is x).
TEST_F(VulkanRows, ViewsAtAnyOffset) {
    struct Offsets {
        std::size_t x, out, gamma, beta;
    };
    std::vector<Offsets> const offsets{{0, 0, 0, 0}, {4, 8, 4, 12}, {1, 0, 0, 0}, {0, 3, 0, 0},
                                       {0, 0, 2, 0}, {0, 0, 0, 1},  {5, 6, 7, 9}};
    std::vector<RowShape> const shapes{{5, 68}, {3, 4096}, {7, 1000}, {2, 8196}};
    // A view of `n` elements starting `offset` elements into a larger tensor holding `fill` elsewhere.
    auto view = [&](std::vector<float> const& values, std::size_t offset, float fill, Shape shape) {
        std::vector<float> host(offset + values.size() + 5, fill);
        std::copy(values.begin(), values.end(), host.begin() + static_cast<std::ptrdiff_t>(offset));
        auto whole = Tensor<float>::from(host, {host.size()}, device);
        return std::pair{whole, whole.slice(static_cast<std::int64_t>(offset), static_cast<std::int64_t>(offset + values.size()))
                                    .reshape(std::vector<std::int64_t>(shape.dims().begin(), shape.dims().end()))};
    };
    on_every_path([&] {
        for (auto [rows, cols] : shapes) {
            for (Offsets o : offsets) {
                auto const seed = fresh_seed();
                SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", offsets x " + std::to_string(o.x) +
                             " out " + std::to_string(o.out) + " gamma " + std::to_string(o.gamma) + " beta " +
                             std::to_string(o.beta) + ", seed " + std::to_string(seed));
                auto const v = random_floats(rows * cols, seed, -6.0f, 9.0f);
                auto const gv = random_floats(cols, seed + 1, -2.0f, 2.0f), bv = random_floats(cols, seed + 2);
                auto const [x_all, x] = view(v, o.x, 1.0f, {rows, cols});
                auto const [g_all, g] = view(gv, o.gamma, 1.0f, {cols});
                auto const [b_all, b] = view(bv, o.beta, 1.0f, {cols});
                for (RowOp op : all_row_ops) {
                    SCOPED_TRACE(name(op));
                    bool const norm = op == RowOp::layer_norm || op == RowOp::rms_norm;
                    auto const [out_all, out] = view(std::vector<float>(rows * cols, poison), o.out, poison, {rows, cols});
                    reset_stats();
                    run(op, x, norm ? &g : nullptr, norm ? &b : nullptr, out);
                    auto const all = out_all.to_vector();
                    EXPECT_EQ(stats().cpu_fallbacks, 0u);
                    std::vector<float> const got(all.begin() + static_cast<std::ptrdiff_t>(o.out),
                                                 all.begin() + static_cast<std::ptrdiff_t>(o.out + rows * cols));
                    std::string first;
                    EXPECT_EQ(row_op_errors(op, v, cols, got, norm ? &gv : nullptr, norm ? &bv : nullptr, first), 0u) << first;
                    for (std::size_t i = 0; i < all.size(); ++i)
                        if (i < o.out || i >= o.out + rows * cols) ASSERT_EQ(all[i], poison) << "written outside the view at " << i;
                }
                // In place: the result replaces x's view, its neighbours untouched.
                auto const [y_all, y] = view(v, o.x, 1.0f, {rows, cols});
                softmax(y, -1, y);
                auto const all = y_all.to_vector();
                std::vector<float> const got(all.begin() + static_cast<std::ptrdiff_t>(o.x),
                                             all.begin() + static_cast<std::ptrdiff_t>(o.x + rows * cols));
                std::string first;
                EXPECT_EQ(row_op_errors(RowOp::softmax, v, cols, got, nullptr, nullptr, first), 0u) << "in place: " << first;
                for (std::size_t i = 0; i < all.size(); ++i)
                    if (i < o.x || i >= o.x + rows * cols) ASSERT_EQ(all[i], 1.0f) << "written outside the view at " << i;
            }
        }
    });
}

}  // namespace
}  // namespace rayo::test
