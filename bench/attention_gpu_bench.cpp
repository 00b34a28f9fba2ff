// Attention on the benchmark GPU at the anchors' shapes (../shared/anchors/torch_anchors.py):
// causal f16 prefill, 32 heads of 128, batch 1 (FLOPs counted as PyTorch's SDPA benchmarks count a
// causal pass: half of 4·q_len·kv_len·head_dim a head), and decode of one query row against a
// KV cache of 8 key/value heads (bytes: k and v read once), the caches rotated out of L2 or not.
#include "bench_support.hpp"

#include <string>
#include <vector>

namespace rayo_bench {
namespace {

using Half = rayo::Tensor<rayo::half>;

template <class T>
void run_prefill(benchmark::State& state, std::int64_t len, bool causal, std::int64_t kv_heads = 32) {
    rayo::Device const device = bench_device();
    std::int64_t const heads = 32, d = 128;
    auto const q = random_tensor<T>(rayo::Shape{1, len, heads, d}, device, {-1.0f, 1.0f}, 1);
    auto const k = random_tensor<T>(rayo::Shape{1, len, kv_heads, d}, device, {-1.0f, 1.0f}, 2);
    auto const v = random_tensor<T>(rayo::Shape{1, len, kv_heads, d}, device, {-1.0f, 1.0f}, 3);
    auto const out = output_tensor<T>(rayo::Shape{1, len, heads, d}, device);
    rayo::AttentionParams params;
    params.causal = causal;
    time_op(state, device, [&] { rayo::attention_into(q, k, v, params, out); });
    double const flops = 4.0 * static_cast<double>(heads * len * len * d);
    report(state, {.flops = causal ? flops / 2 : flops});
}

void run_decode(benchmark::State& state, std::int64_t cache, std::int64_t heads, std::int64_t kv_heads, bool cold) {
    rayo::Device const device = bench_device();
    std::int64_t const d = 128;
    Half const q = random_tensor<rayo::half>(rayo::Shape{1, 1, heads, d}, device, {-1.0f, 1.0f}, 1);
    // Cold: enough caches that none is in L2 when it is read again (about 512 MiB of them); hot:
    // one, as PyTorch's anchor measures it.
    double const bytes = 2.0 * static_cast<double>(cache * kv_heads * d) * 2.0;
    std::vector<Half> ks, vs;
    for (int i = 0; i < 1 || (cold && (static_cast<double>(i) * bytes < 512.0 * (1 << 20) || i < 2)); ++i) {
        ks.push_back(random_tensor<rayo::half>(rayo::Shape{1, cache, kv_heads, d}, device, {-1.0f, 1.0f}, 2 + 2 * i));
        vs.push_back(random_tensor<rayo::half>(rayo::Shape{1, cache, kv_heads, d}, device, {-1.0f, 1.0f}, 3 + 2 * i));
    }
    Half const out = output_tensor<rayo::half>(rayo::Shape{1, 1, heads, d}, device);
    rayo::AttentionParams params;
    params.causal = true;
    std::size_t next = 0;
    time_op(state, device, [&] {
        rayo::attention_into(q, ks[next], vs[next], params, out);
        next = (next + 1) % ks.size();
    });
    report(state, {.bytes = bytes});
}

}  // namespace

void register_attention_gpu() {
    if (bench_device().kind() == rayo::DeviceKind::cpu) return;
    for (std::int64_t len : {1024, 4096})
        for (bool causal : {true, false})
            add_benchmark("gpu/attention/prefill/f16_h32_d128_s" + std::to_string(len) + (causal ? "_causal" : ""),
                          [=](benchmark::State& st) { run_prefill<rayo::half>(st, len, causal); });
    // A Llama-3-8B prompt of 512 tokens (8 key/value heads), in f16 and f32.
    add_benchmark("gpu/attention/prefill/f16_h32_kv8_d128_s512_causal",
                  [](benchmark::State& st) { run_prefill<rayo::half>(st, 512, true, 8); });
    add_benchmark("gpu/attention/prefill/f32_h32_kv8_d128_s512_causal",
                  [](benchmark::State& st) { run_prefill<float>(st, 512, true, 8); });
    for (std::int64_t cache : {1024, 8192})
        for (bool cold : {true, false})
            add_benchmark(
                "gpu/attention/decode/f16_h32_kv8_d128_cache" + std::to_string(cache) + (cold ? "/cold" : "/hot"),
                [=](benchmark::State& st) { run_decode(st, cache, 32, 8, cold); });
}

}  // namespace rayo_bench
