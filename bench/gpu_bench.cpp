// GPU benchmarks at the shapes the anchors measure (../shared/anchors/torch_anchors.py), so rayo
// and cuBLAS/PyTorch can be compared case by case from one run on the same machine. Registered
// only when the benchmark device is a GPU.
//
// Bandwidth-bound GEMVs rotate over enough weight copies that no call finds its weights in L2
// ("cold"); "hot" reuses one buffer, as ggml's test-backend-ops does.
#include "bench_support.hpp"

#include <string>
#include <vector>

namespace rayo_bench {
namespace {

using rayo::FTensor;

// Several times the largest L2 of the devices in question (50-60 MB).
constexpr double rotation_bytes = 512.0 * (1 << 20);
constexpr std::int64_t big = std::int64_t{1} << 28;  // 1 GiB of floats

void run_copy(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{big}, device);
    // Into one preallocated tensor: the memory's rate, without a 1 GiB allocation a call (which
    // Vulkan does not pool: a new allocation each call leaves the GPU idle and its clocks drop).
    FTensor const y = output_tensor(rayo::Shape{big}, device);
    time_op(state, device, [&] { rayo::copy_into(x, y); });
    report(state, {.bytes = 2.0 * static_cast<double>(x.bytes())});
}

// The copy at the byte count of one GEMV's weights, rotated out of L2 like the cold GEMV: what the
// device's memory gives an operation of that size, launch and ramp included.
std::vector<FTensor> rotated_copies(std::int64_t bytes, rayo::Device device) {
    std::vector<FTensor> copies{random_tensor(rayo::Shape{bytes / 4}, device)};
    while (static_cast<double>(copies.size()) * static_cast<double>(bytes) < rotation_bytes)
        copies.push_back(copies[0].clone());
    return copies;
}

void run_copy_cold(benchmark::State& state, std::int64_t bytes) {
    rayo::Device const device = bench_device();
    std::vector<FTensor> const copies = rotated_copies(bytes, device);
    std::size_t next = 0;
    time_op(state, device, [&] {
        (void)copies[next].clone();
        next = (next + 1) % copies.size();
    });
    report(state, {.bytes = 2.0 * static_cast<double>(bytes)});
}

// The read-only counterpart: a sum over the same bytes, rotated the same way. A GEMV reads its
// weights once and writes little, so this is the closer bound for it.
void run_sum_cold(benchmark::State& state, std::int64_t bytes) {
    rayo::Device const device = bench_device();
    std::vector<FTensor> const copies = rotated_copies(bytes, device);
    FTensor const out = output_tensor(rayo::Shape{}, device);
    std::size_t next = 0;
    time_op(state, device, [&] {
        rayo::sum_into(copies[next], out);
        next = (next + 1) % copies.size();
    });
    report(state, {.bytes = static_cast<double>(bytes)});
}

// A bias row added to every row of [8192, 4096] (broadcast), bytes counted as the PyTorch anchor
// counts them: the matrix read and the result written.
void run_bias_add(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const a = random_tensor(rayo::Shape{8192, 4096}, device);
    FTensor const bias = random_tensor(rayo::Shape{4096}, device);
    FTensor const out = output_tensor(rayo::Shape{8192, 4096}, device);
    time_op(state, device, [&] { rayo::add_into(a, bias, out); });
    report(state, {.bytes = 2.0 * static_cast<double>(a.bytes())});
}

// f32 -> f16 of 2^28 values: 4 bytes read and 2 written each.
void run_cast_f16(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{big}, device);
    auto const out = rayo::Tensor<rayo::half>::empty(rayo::Shape{big}, device);
    time_op(state, device, [&] { rayo::cast_into(x, out); });
    report(state, {.bytes = 6.0 * static_cast<double>(big)});
}

// The transpose of a 4096 x 4096 f32 matrix into a new one: read and written once.
void run_permute(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{4096, 4096}, device);
    time_op(state, device, [&] { (void)rayo::permute(x, {1, 0}); });
    report(state, {.bytes = 2.0 * static_cast<double>(x.bytes())});
}

// Attention-shaped batched products: 32 heads of [512, 128]·[128, 512] in f16 (f32 results), as
// torch.bmm.
void run_bmm(benchmark::State& state) {
    rayo::Device const device = bench_device();
    std::int64_t const batch = 32, m = 512, k = 128, n = 512;
    auto const a = random_tensor<rayo::half>(rayo::Shape{batch, m, k}, device, {-1.0f, 1.0f}, 1);
    auto const b = random_tensor<rayo::half>(rayo::Shape{batch, k, n}, device, {-1.0f, 1.0f}, 2);
    FTensor const out = output_tensor(rayo::Shape{batch, m, n}, device);
    time_op(state, device, [&] { rayo::matmul_into(a, b, out); });
    report(state, {.flops = 2.0 * static_cast<double>(batch * m * n * k)});
}

// ResNet-50's convolutions at batch 32 in f16, as torch.nn.functional.conv2d (cuDNN) runs them.
struct ConvCase {
    std::int64_t c, o, hw, k, stride;
};
void run_conv2d(benchmark::State& state, ConvCase cc) {
    rayo::Device const device = bench_device();
    std::int64_t const n = 32, pad = cc.k / 2, out_hw = (cc.hw + 2 * pad - cc.k) / cc.stride + 1;
    auto const x = random_tensor<rayo::half>(rayo::Shape{n, cc.c, cc.hw, cc.hw}, device, {-1.0f, 1.0f}, 1);
    auto const w = random_tensor<rayo::half>(rayo::Shape{cc.o, cc.c, cc.k, cc.k}, device, {-0.1f, 0.1f}, 2);
    auto const out = output_tensor<rayo::half>(rayo::Shape{n, cc.o, out_hw, out_hw}, device);
    rayo::Conv2dParams const params{.stride = {int(cc.stride), int(cc.stride)}, .padding = {int(pad), int(pad)}};
    time_op(state, device, [&] { rayo::conv2d_into(x, w, params, out); });
    report(state, {.flops = 2.0 * static_cast<double>(n * cc.o * out_hw * out_hw * cc.c * cc.k * cc.k)});
}

// n × n · n × n; `options` as given (matmul_tf32: allow_tf32, as PyTorch's anchor row; _nt: b read
// as [n, k], with no transposition before the product).
template <class T>
void run_matmul(benchmark::State& state, std::int64_t n, rayo::MatmulOptions options = {}) {
    rayo::Device const device = bench_device();
    auto const a = random_tensor<T>(rayo::Shape{n, n}, device, {-1.0f, 1.0f}, 1);
    auto const b = random_tensor<T>(rayo::Shape{n, n}, device, {-1.0f, 1.0f}, 2);
    FTensor const out = output_tensor(rayo::Shape{n, n}, device);
    time_op(state, device, [&] { rayo::matmul_into(a, b, out, options); });
    report(state, {.flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n)});
}

// A prefill-sized product with f16 weights (512 tokens, out = 4096, in = 14336): as matmul of f16
// operands a[512, in] · b[in, out], and as linear(x, w) with f32 x and f16 w[out, in], the form a
// model with f16 weights calls.
void run_f16_prefill(benchmark::State& state, bool as_linear) {
    rayo::Device const device = bench_device();
    std::int64_t const tokens = 512, out_features = 4096, in_features = 14336;
    FTensor const out = output_tensor(rayo::Shape{tokens, out_features}, device);
    if (as_linear) {
        FTensor const x = random_tensor(rayo::Shape{tokens, in_features}, device, {-1.0f, 1.0f}, 1);
        auto const w = random_tensor<rayo::half>(rayo::Shape{out_features, in_features}, device, {-1.0f, 1.0f}, 2);
        time_op(state, device, [&] { rayo::linear_into(x, w, out); });
    } else {
        auto const a = random_tensor<rayo::half>(rayo::Shape{tokens, in_features}, device, {-1.0f, 1.0f}, 1);
        auto const b = random_tensor<rayo::half>(rayo::Shape{in_features, out_features}, device, {-1.0f, 1.0f}, 2);
        time_op(state, device, [&] { rayo::matmul_into(a, b, out); });
    }
    report(state, {.flops = 2.0 * static_cast<double>(tokens * out_features) * static_cast<double>(in_features)});
}

void run_softmax(benchmark::State& state, std::int64_t rows, std::int64_t cols) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{rows, cols}, device);
    FTensor const out = output_tensor(rayo::Shape{rows, cols}, device);
    time_op(state, device, [&] { rayo::softmax_into(x, -1, out); });
    report(state, {.bytes = 2.0 * static_cast<double>(x.bytes())});
}

void run_sum(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{big}, device);
    FTensor const out = output_tensor(rayo::Shape{}, device);
    time_op(state, device, [&] { rayo::sum_into(x, out); });
    report(state, {.bytes = static_cast<double>(x.bytes())});
}

void run_gelu(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{big}, device);
    FTensor const out = output_tensor(rayo::Shape{big}, device);
    time_op(state, device, [&] { rayo::gelu_into(x, rayo::Gelu::exact, out); });
    report(state, {.bytes = 2.0 * static_cast<double>(x.bytes())});
}

// `independent`: each weight copy writes its own y, so consecutive GEMVs share only x (as a
// model's q/k/v or gate/up projections do) and need not wait for each other.
template <class W>
void run_quant_linear(benchmark::State& state, std::int64_t batch, std::int64_t out_features, std::int64_t in_features,
                      bool cold, bool independent = false) {
    rayo::Device const device = bench_device();
    // Quantized once on the CPU (q4_k/q6_k quantization is a CPU op), then uploaded.
    auto const w =
        rayo::quantize<W>(random_tensor(rayo::Shape{out_features, in_features}, rayo::Device::cpu(), {-1.0f, 1.0f}, 7))
            .to(device);
    std::vector<rayo::Tensor<W>> copies{w};
    if (cold) {
        auto const count = static_cast<std::size_t>(rotation_bytes / static_cast<double>(w.bytes())) + 1;
        while (copies.size() < count) copies.push_back(w.clone());
    }
    FTensor const x = random_tensor(rayo::Shape{batch, in_features}, device, {-1.0f, 1.0f}, 8);
    std::vector<FTensor> ys{output_tensor(rayo::Shape{batch, out_features}, device)};
    while (independent && ys.size() < copies.size())
        ys.push_back(output_tensor(rayo::Shape{batch, out_features}, device));
    std::size_t next = 0;
    time_op(state, device, [&] {
        rayo::linear_into(x, copies[next], ys[independent ? next : 0]);
        next = (next + 1) % copies.size();
    });
    report(state, {.bytes = static_cast<double>(w.bytes()),
                   .flops = 2.0 * static_cast<double>(batch * out_features) * static_cast<double>(in_features)});
}

// Back-to-back launches of a tiny op, synchronised once per batch: the per-op dispatch cost.
void run_tiny_op(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{16}, device);
    time_op(state, device, [&] { rayo::add_into(x, 1.0f, x); });
}

// One tiny op and a host read of its result: the round trip a synchronous caller pays.
void run_tiny_op_with_read(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{16}, device);
    time_op(state, device, [&] {
        rayo::add_into(x, 1.0f, x);
        benchmark::DoNotOptimize(x.to_vector());
    });
}

// 100 tiny ops in a row, issued one by one or replayed from a capture (rayo::Graph): the host's
// cost per op (CPU time / 100) and the device's (real time / 100); the ops counter is per second.
void run_tiny_ops(benchmark::State& state, bool replay) {
    constexpr int count = 100;
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{16}, device);
    auto const issue = [&] {
        for (int i = 0; i < count; ++i) rayo::add_into(x, 1.0f, x);
    };
    if (replay) {
        rayo::Graph graph = rayo::capture(device, issue);
        time_op(state, device, [&] { graph.replay(); });
    } else {
        time_op(state, device, issue);
    }
    state.counters["ops"] = benchmark::Counter(count, benchmark::Counter::kIsIterationInvariantRate);
}

template <class W>
std::string weight_name() {
    return std::string(rayo::to_string(rayo::dtype_of<W>));
}

template <class W>
void register_quant_linear() {
    struct Shape {
        std::int64_t out, in;
    };
    for (Shape s : {Shape{4096, 4096}, Shape{14336, 4096}, Shape{4096, 14336}}) {
        std::string const shape = std::to_string(s.out) + "x" + std::to_string(s.in);
        add_benchmark("gpu/linear_" + weight_name<W>() + "/1x" + shape + "/cold",
                      [=](benchmark::State& st) { run_quant_linear<W>(st, 1, s.out, s.in, true); });
        add_benchmark("gpu/linear_" + weight_name<W>() + "/1x" + shape + "/cold/independent",
                      [=](benchmark::State& st) { run_quant_linear<W>(st, 1, s.out, s.in, true, true); });
        add_benchmark("gpu/linear_" + weight_name<W>() + "/1x" + shape + "/hot",
                      [=](benchmark::State& st) { run_quant_linear<W>(st, 1, s.out, s.in, false); });
    }
    // Prefill-sized products: 512 tokens, and fewer, where the choice between the fused mma.sync
    // GEMM and (on Hopper) the f16-decoded weights through the warpgroup MMAs turns.
    for (std::int64_t rows : {32, 128, 256, 512})
        add_benchmark("gpu/linear_" + weight_name<W>() + "/" + std::to_string(rows) + "x4096x14336",
                      [rows](benchmark::State& st) { run_quant_linear<W>(st, rows, 4096, 14336, false); });
}

}  // namespace

void register_gpu() {
    if (bench_device().kind() == rayo::DeviceKind::cpu) return;
    add_benchmark("gpu/copy/1GiB", run_copy);
    // The weight bytes of the GEMV shapes below: q4_k 4096x4096, 4096x14336; q6_k the same.
    for (std::int64_t bytes : {9437184, 33030144, 13762560, 48168960}) {
        add_benchmark("gpu/copy/" + std::to_string(bytes) + "/cold",
                      [bytes](benchmark::State& st) { run_copy_cold(st, bytes); });
        add_benchmark("gpu/sum/" + std::to_string(bytes) + "/cold",
                      [bytes](benchmark::State& st) { run_sum_cold(st, bytes); });
    }
    for (std::int64_t n : {1024, 4096, 8192}) {
        add_benchmark("gpu/matmul_f32/" + std::to_string(n), [n](benchmark::State& st) { run_matmul<float>(st, n); });
        add_benchmark("gpu/matmul_tf32/" + std::to_string(n),
                      [n](benchmark::State& st) { run_matmul<float>(st, n, {.allow_tf32 = true}); });
        add_benchmark("gpu/matmul_tf32_nt/" + std::to_string(n), [n](benchmark::State& st) {
            run_matmul<float>(st, n, {.transpose_b = true, .allow_tf32 = true});
        });
        add_benchmark("gpu/matmul_bf16/" + std::to_string(n),
                      [n](benchmark::State& st) { run_matmul<rayo::bfloat16>(st, n); });
        add_benchmark("gpu/matmul_f16/" + std::to_string(n),
                      [n](benchmark::State& st) { run_matmul<rayo::half>(st, n); });
    }
    add_benchmark("gpu/matmul_f16/512x4096x14336", [](benchmark::State& st) { run_f16_prefill(st, false); });
    add_benchmark("gpu/linear_f16/512x4096x14336", [](benchmark::State& st) { run_f16_prefill(st, true); });
    struct Rows {
        std::int64_t rows, cols;
    };
    for (Rows r : {Rows{4096, 4096}, Rows{32768, 4096}, Rows{1 << 20, 128}, Rows{1 << 16, 4096}})
        add_benchmark("gpu/softmax/" + std::to_string(r.rows) + "x" + std::to_string(r.cols),
                      [r](benchmark::State& st) { run_softmax(st, r.rows, r.cols); });
    add_benchmark("gpu/sum/2^28", run_sum);
    add_benchmark("gpu/gelu/2^28", run_gelu);
    add_benchmark("gpu/bias_add/8192x4096", run_bias_add);
    add_benchmark("gpu/cast_f32_f16/2^28", run_cast_f16);
    add_benchmark("gpu/permute/4096x4096", run_permute);
    add_benchmark("gpu/embedding/4096_of_128256x4096_f16",
                  [](benchmark::State& s) { run_embedding(s, 128256, 4096, 4096); });
    add_benchmark("gpu/bmm/32x512x128x512_f16", run_bmm);
    add_benchmark("gpu/conv2d/n32_64x56x56_3x3_64_f16", [](benchmark::State& st) {
        run_conv2d(st, {64, 64, 56, 3, 1});
    });
    add_benchmark("gpu/conv2d/n32_256x56x56_1x1s2_512_f16", [](benchmark::State& st) {
        run_conv2d(st, {256, 512, 56, 1, 2});
    });
    register_quant_linear<rayo::q4_k>();
    register_quant_linear<rayo::q6_k>();
    register_quant_linear<rayo::q5_k>();
    register_quant_linear<rayo::q8_0>();
    register_quant_linear<rayo::q4_0>();
    add_benchmark("gpu/tiny_op", run_tiny_op);
    add_benchmark("gpu/tiny_op_with_read", run_tiny_op_with_read);
    add_benchmark("gpu/tiny_op_x100/eager", [](benchmark::State& st) { run_tiny_ops(st, false); });
    add_benchmark("gpu/tiny_op_x100/replay", [](benchmark::State& st) { run_tiny_ops(st, true); });
}

}  // namespace rayo_bench
