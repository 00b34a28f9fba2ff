// rayo::capture and rayo::Graph on every kind of device present: the CPU, a Vulkan device
// (lavapipe in CI, with the validation layer), the simulated CUDA device (the CUDA backend's op
// glue on the PTX simulator, replaying the recorded ops) and a real CUDA GPU (a CUDA graph).
// Replays against the same ops run eagerly on fresh inputs; what a capture refuses; replay after
// a tensor is gone.
#include <gtest/gtest.h>
#include <rayo/rayo.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.hpp"
#include "support/vulkan_support.hpp"
#if RAYO_TEST_SIMULATED_CUDA
#include "ops/simulated_cuda.hpp"
#endif

namespace rayo::test {
namespace {

// Where a case runs: "cpu", "vulkan" (the first Vulkan device), "cuda_sim", "cuda" (a GPU).
class GraphTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        std::string const& where = GetParam();
        if (where == "cpu") {
            device = Device::cpu();
        } else if (where == "vulkan") {
            std::optional<Device> const d = first_vulkan_device();
            if (!d) GTEST_SKIP() << "no Vulkan device";
            device = *d;
        } else if (where == "cuda_sim") {
#if RAYO_TEST_SIMULATED_CUDA
            device = ops::register_simulated_cuda();
            simulated = true;
#else
            GTEST_SKIP() << "the CUDA backend is not built";
#endif
        } else {
            std::optional<Device> found;
            for (Device d : Device::all())
                if (d.kind() == DeviceKind::cuda) found = d;
            if (!found) GTEST_SKIP() << "no CUDA device";
            device = *found;
        }
    }
    void TearDown() override {
#if RAYO_TEST_SIMULATED_CUDA
        if (simulated) ops::unregister_simulated_cuda();
#endif
    }
    [[nodiscard]] Tensor<float> upload(std::vector<float> const& v, Shape shape) const {
        return Tensor<float>::from(std::span<float const>(v), std::move(shape), device);
    }
    // Whether the device records natively: a CUDA graph on a GPU, a secondary command buffer on Vulkan.
    [[nodiscard]] bool native() const {
        return (device.kind() == DeviceKind::cuda && !simulated) || device.kind() == DeviceKind::vulkan;
    }
    Device device = Device::cpu();
    bool simulated = false;
};

// A decode-like step: y = silu(x · wᵀ) + x2 · 0.5 over fixed tensors, replayed on new inputs.
TEST_P(GraphTest, ReplaysTheRecordedOpsOnTheTensorsCurrentContents) {
    constexpr std::int64_t rows = 3, in = 40, out = 24;
    std::uint32_t const seed = fresh_seed();
    std::vector<float> const wv = random_floats(out * in, seed, -1, 1);
    auto const w = upload(wv, {out, in});
    auto x = Tensor<float>::zeros({rows, in}, device);
    auto const x2 = upload(random_floats(rows * out, seed + 1, -1, 1), {rows, out});
    auto const y = poisoned({rows, out}, device);
    auto const half_x2 = Tensor<float>::zeros({rows, out}, device);
    std::uint64_t const ops_before = stats().ops;
    Graph step = capture(device, [&] {
        linear_into(x, w, y);
        silu_into(y, y);
        scale_into(x2, 0.5f, half_x2);
        add_into(y, half_x2, y);
    });
    EXPECT_EQ(step.ops(), 4u);
    EXPECT_EQ(step.device(), device);
    EXPECT_EQ(step.native(), native());
    EXPECT_EQ(stats().ops, ops_before) << "a capture runs nothing";
    for (float v : y.to_vector()) ASSERT_EQ(v, poison) << "a capture runs nothing";

    for (std::uint32_t round = 0; round < 3; ++round) {
        std::vector<float> const xv = random_floats(rows * in, seed + 10 + round, -1, 1);
        copy_into(upload(xv, {rows, in}), x);
        std::uint64_t const ops = stats().ops;
        step.replay();
        EXPECT_EQ(stats().ops, ops + 4) << "each replay counts its ops";
        FTensor const want = add(silu(linear(x, w)), scale(x2, 0.5f));
        std::vector<float> const got = y.to_vector(), expected = want.to_vector();
        ASSERT_EQ(got.size(), expected.size());
        for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "round " << round << ", " << i;
    }
}

// A decode step's ops whose backends use memory of their own between kernels (attention's split
// keys, a formed linear input, a gather's ids): replayed several times without a host wait between
// them, then once more after the graph is gone from the scope of a second one, against the same ops
// run one by one.
TEST_P(GraphTest, OpsWithTemporariesReplayLikeTheOpsRunOneByOne) {
    constexpr std::int64_t width = 64, heads = 4, kv_heads = 2, head_dim = 16, context = 300, ffn = 96;
    std::uint32_t const seed = fresh_seed();
    auto const w_qkv = upload(random_floats((heads + 2 * kv_heads) * head_dim * width, seed, -0.2f, 0.2f),
                              {(heads + 2 * kv_heads) * head_dim, width});
    auto const w_up = upload(random_floats(2 * ffn * width, seed + 1, -0.2f, 0.2f), {2 * ffn, width});
    auto const w_down = upload(random_floats(width * ffn, seed + 2, -0.2f, 0.2f), {width, ffn});
    auto const gain = upload(random_floats(width, seed + 3, 0.5f, 1.5f), {width});
    auto const keys =
        upload(random_floats(context * kv_heads * head_dim, seed + 4, -1, 1), {context, kv_heads, head_dim});
    auto const values =
        upload(random_floats(context * kv_heads * head_dim, seed + 5, -1, 1), {context, kv_heads, head_dim});
    auto const x = Tensor<float>::zeros({1, width}, device);
    auto const qkv = Tensor<float>::zeros({(heads + 2 * kv_heads) * head_dim}, device);
    auto const attended = Tensor<float>::zeros({1, heads, head_dim}, device);
    auto const gate_up = Tensor<float>::zeros({2 * ffn}, device);
    auto const y = poisoned({1, width}, device);
    auto const ids = Tensor<std::int32_t>::from(std::vector<std::int32_t>{7}, {1}, device);
    auto const row = Tensor<float>::zeros({1, width}, device);
    FTensor const q = qkv.slice(0, heads * head_dim).reshape({1, heads, head_dim});
    FTensor const gate = gate_up.slice(0, ffn).reshape({1, ffn}), up = gate_up.slice(ffn, 2 * ffn).reshape({1, ffn});
    static_assert(heads * head_dim == width);
    auto const step = [&] {
        rms_norm_linear_into(x, gain, 1e-5f, w_qkv, qkv.reshape({1, (heads + 2 * kv_heads) * head_dim}));
        attention_into(q, keys, values, AttentionParams{}, attended);
        linear_into(attended.reshape({1, width}), w_up, gate_up.reshape({1, 2 * ffn}));
        swiglu_linear_into(gate, up, w_down, x.reshape({width}), y);
        index_select_into(w_up, 0, ids, row);
    };
    Graph g = capture(device, step);
    EXPECT_EQ(g.native(), native());
    std::vector<std::vector<float>> inputs;
    for (std::uint32_t round = 0; round < 3; ++round) inputs.push_back(random_floats(width, seed + 10 + round, -1, 1));
    std::vector<std::vector<float>> replayed;
    for (auto const& in : inputs) {
        copy_into(upload(in, {1, width}), x);
        g.replay();
        g.replay();  // the same inputs again, queued behind the first: the same outputs
        replayed.push_back(y.to_vector());
    }
    for (std::size_t round = 0; round < inputs.size(); ++round) {
        copy_into(upload(inputs[round], {1, width}), x);
        step();
        std::vector<float> const want = y.to_vector();
        ASSERT_EQ(replayed[round].size(), want.size());
        for (std::size_t i = 0; i < want.size(); ++i)
            ASSERT_EQ(replayed[round][i], want[i]) << "round " << round << ", " << i;
    }
    std::vector<float> const picked = row.to_vector(), table = w_up.to_vector();
    for (std::int64_t c = 0; c < width; ++c) ASSERT_EQ(picked[c], table[7 * width + c]);
}

// Attention over a whole cache whose position is a device tensor: one capture serves every
// position, each replay seeing the keys up to the value stored there, as the op run eagerly with
// that tensor does (bit for bit) and, within rounding, as attention over the seen rows only.
TEST_P(GraphTest, AttentionFollowsItsStoredPositionBetweenReplays) {
    constexpr std::int64_t heads = 4, kv_heads = 2, head_dim = 16, context = 300;
    std::uint32_t const seed = fresh_seed();
    auto const q = upload(random_floats(heads * head_dim, seed, -1, 1), {1, heads, head_dim});
    auto const keys =
        upload(random_floats(context * kv_heads * head_dim, seed + 1, -1, 1), {context, kv_heads, head_dim});
    auto const values =
        upload(random_floats(context * kv_heads * head_dim, seed + 2, -1, 1), {context, kv_heads, head_dim});
    auto const position = Tensor<std::int32_t>::zeros({1}, device);
    auto const out = poisoned({1, heads, head_dim}, device);
    AttentionParams params;
    params.causal = true;
    params.query_position = position;
    Graph g = capture(device, [&] { attention_into(q, keys, values, params, out); });
    AttentionParams causal;
    causal.causal = true;
    for (std::int32_t const at : {0, 17, 150, 299}) {
        copy_into(Tensor<std::int32_t>::from(std::vector<std::int32_t>{at}, {1}, device), position);
        g.replay();
        std::vector<float> const got = out.to_vector();
        std::vector<float> const eager = attention(q, keys, values, params).to_vector();
        std::vector<float> const seen =
            attention(q, keys.slice(0, at + 1), values.slice(0, at + 1), causal).to_vector();
        ASSERT_EQ(got.size(), seen.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], eager[i]) << "position " << at << ", " << i;
            ASSERT_NEAR(got[i], seen[i], 1e-5) << "position " << at << ", " << i;
        }
    }
}

// A device that records natively refuses another thread's work while a capture records it.
TEST_P(GraphTest, AnotherThreadsOpDuringACaptureThrows) {
    if (!native()) GTEST_SKIP() << "the ops are recorded as a list: other threads' ops run as usual";
    auto const x = Tensor<float>::zeros({16}, device);
    auto const other = Tensor<float>::zeros({16}, device);
    std::string message;
    Graph g = capture(device, [&] {
        add_into(x, 1.0f, x);
        std::thread([&] {
            try {
                add_into(other, 1.0f, other);
            } catch (Error const& e) {
                message = e.what();
            }
        }).join();
    });
    EXPECT_NE(message.find("another thread"), std::string::npos) << message;
    g.replay();
    for (float v : x.to_vector()) ASSERT_EQ(v, 1.0f);
    add_into(other, 1.0f, other);
    for (float v : other.to_vector()) ASSERT_EQ(v, 1.0f);
}

// What a capture records is ops on its device's tensors; anything else throws rayo::Error naming
// it, leaves no graph and the device usable.
TEST_P(GraphTest, RefusesWhatItCannotRecord) {
    auto x = Tensor<float>::zeros({64}, device);
    auto const cpu = Tensor<float>::zeros({64});
    auto const refused = [&](std::function<void()> const& body, std::string const& says) {
        try {
            (void)capture(device, body);
            ADD_FAILURE() << "no error; expected one saying '" << says << "'";
        } catch (Error const& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("capture on " + device.id()), std::string::npos) << e.what();
        }
    };
    refused([&] { (void)add(x, 1.0f); }, "making a tensor");
    refused([&] { (void)x.to_vector(); }, "read to the host");
    refused([&] { device.synchronize(); }, "synchronize");
    refused([&] { (void)x.clone(); }, "making a tensor");
    if (device.kind() != DeviceKind::cpu) refused([&] { add_into(cpu, 1.0f, cpu); }, "its own device only");
    refused([&] { (void)capture(device, [] {}); }, "a capture inside");
    // The device works as before, and the next capture records.
    add_into(x, 2.0f, x);
    Graph g = capture(device, [&] { add_into(x, 1.0f, x); });
    g.replay();
    g.replay();
    for (float v : x.to_vector()) ASSERT_EQ(v, 4.0f);
}

// The graph does not own its tensors: replay after one is destroyed is an error that names the op
// and operand, and runs nothing.
TEST_P(GraphTest, ReplayAfterATensorIsDestroyedThrowsAndRunsNothing) {
    auto const y = Tensor<float>::zeros({32}, device);
    std::optional<Tensor<float>> x = Tensor<float>::full({32}, 1.0f, device);
    Graph g = capture(device, [&] {
        add_into(y, 1.0f, y);
        add_into(*x, y, y);
    });
    g.replay();
    x.reset();
    try {
        g.replay();
        ADD_FAILURE() << "no error";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("op 1 (add) input 0"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("destroyed"), std::string::npos) << e.what();
    }
    for (float v : y.to_vector()) ASSERT_EQ(v, 2.0f) << "the failed replay ran nothing";
}

INSTANTIATE_TEST_SUITE_P(Graph, GraphTest, ::testing::Values("cpu", "vulkan", "cuda_sim", "cuda"),
                         [](auto const& info) { return "graph_on_" + info.param; });

}  // namespace
}  // namespace rayo::test
