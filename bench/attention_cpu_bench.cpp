// Attention on the CPU: rayo::attention (flash style, causal rows skipping the keys they do not see)
// beside the same result built from rayo's own ops, the score matrix stored: a batched q·kᵀ
// (matmul with transpose_b, q prescaled), the causal mask added, softmax, and the product with v.
// Prefill (q_len = kv_len, causal) and decode (one query row over a KV cache); FLOP counted as the
// unmasked 4·heads·q_len·kv_len·head_dim of the two products for both, so the rates compare.
#include "bench_support.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace rayo_bench {
namespace {

using rayo::FTensor;

struct AttentionSize {
    std::int64_t heads, kv_heads, q_len, kv_len, head_dim;
    [[nodiscard]] std::string name() const {
        return std::to_string(heads) + "x" + std::to_string(head_dim) + "/" + std::to_string(q_len) + "_of_" +
               std::to_string(kv_len) + (heads != kv_heads ? "_gqa" + std::to_string(kv_heads) : "");
    }
    [[nodiscard]] double flops() const {
        return 4.0 * double(heads) * double(q_len) * double(kv_len) * double(head_dim);
    }
};

void run_attention(benchmark::State& state, AttentionSize s) {
    rayo::Device const device = bench_device();
    FTensor const q = random_tensor(rayo::Shape{1, s.q_len, s.heads, s.head_dim}, device, {-1, 1}, 1);
    FTensor const k = random_tensor(rayo::Shape{1, s.kv_len, s.kv_heads, s.head_dim}, device, {-1, 1}, 2);
    FTensor const v = random_tensor(rayo::Shape{1, s.kv_len, s.kv_heads, s.head_dim}, device, {-1, 1}, 3);
    FTensor const out = output_tensor(q.shape(), device);
    rayo::AttentionParams params;
    params.causal = true;
    time_op(state, device, [&] { rayo::attention_into(q, k, v, params, out); });
    report(state, {.flops = s.flops()});
}

// The baseline: heads-major [heads, len, head_dim] operands (as a model would lay them out for
// batched products), the scores [heads, q_len, kv_len] stored.
void run_matmul_softmax(benchmark::State& state, AttentionSize s) {
    rayo::Device const device = bench_device();
    float const scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    FTensor const q = rayo::mul(random_tensor(rayo::Shape{s.heads, s.q_len, s.head_dim}, device, {-1, 1}, 1), scale);
    FTensor const k = random_tensor(rayo::Shape{s.heads, s.kv_len, s.head_dim}, device, {-1, 1}, 2);
    FTensor const v = random_tensor(rayo::Shape{s.heads, s.kv_len, s.head_dim}, device, {-1, 1}, 3);
    std::vector<float> causal(static_cast<std::size_t>(s.q_len * s.kv_len), 0.0f);
    for (std::int64_t i = 0; i < s.q_len; ++i)
        for (std::int64_t j = s.kv_len - s.q_len + i + 1; j < s.kv_len; ++j)
            causal[static_cast<std::size_t>(i * s.kv_len + j)] = -std::numeric_limits<float>::infinity();
    FTensor const mask = FTensor::from(causal, rayo::Shape{s.q_len, s.kv_len}, device);
    FTensor const scores = output_tensor(rayo::Shape{s.heads, s.q_len, s.kv_len}, device);
    FTensor const out = output_tensor(rayo::Shape{s.heads, s.q_len, s.head_dim}, device);
    time_op(state, device, [&] {
        rayo::matmul_into(q, k, scores, {.transpose_b = true});
        rayo::add_into(scores, mask, scores);
        rayo::softmax_into(scores, -1, scores);
        rayo::matmul_into(scores, v, out);
    });
    report(state, {.flops = s.flops()});
}

}  // namespace

void register_attention_cpu() {
    if (bench_device().kind() != rayo::DeviceKind::cpu) return;
    for (AttentionSize const s : {AttentionSize{32, 32, 1024, 1024, 128}, AttentionSize{8, 8, 1024, 1024, 128},
                                  AttentionSize{32, 32, 1, 4096, 128}, AttentionSize{32, 8, 1, 4096, 128}}) {
        add_benchmark("model/attention/flash/" + s.name(), [s](benchmark::State& st) { run_attention(st, s); });
        if (s.heads == s.kv_heads)
            add_benchmark("model/attention/matmul_softmax/" + s.name(),
                          [s](benchmark::State& st) { run_matmul_softmax(st, s); });
    }
}

}  // namespace rayo_bench
