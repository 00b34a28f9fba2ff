// rayo::llm::Model (rayo/llm/model.hpp): a Llama-family model's forward pass on its device, with
// a prompt's tokens all at once and a decode step's ops in place on buffers kept between steps.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llm/weights.hpp"
#include "rayo/llm/model.hpp"
#include "rayo/rayo.hpp"

namespace rayo::llm {

class Model::Impl {
public:
    Impl(gguf::File const& file, Device device, LoadProgress progress, std::size_t context)
        : hp_(read_hyperparameters(file)), device_(device), w_(load_weights(file, hp_, device, std::move(progress))) {
        if (context != 0 && context < hp_.context) hp_.context = context;
        rayo::Shape const cache_shape = kv_cache_shape();
        try {
            auto const c = cache_shape[0], kv = cache_shape[1], hd = cache_shape[2];
            for (std::size_t i = 0; i < hp_.layers; ++i) {
                kv_cache_.push_back(rayo::FTensor::zeros(rayo::Shape{2, c, kv, hd}, device));
                k_cache_.push_back(kv_cache_.back().slice(0, 1).reshape({c, kv, hd}));
                v_cache_.push_back(kv_cache_.back().slice(1, 2).reshape({c, kv, hd}));
            }
        } catch (rayo::OutOfMemory const& e) {
            throw rayo::OutOfMemory(std::string(e.what()) + ", for a KV cache of " + std::to_string(hp_.context) +
                                    " tokens (" + std::to_string(hp_.layers) + " layers x 2 x " +
                                    cache_shape.to_string() + " f32)");
        }
        half_attention_ = device.kind() != rayo::DeviceKind::cpu && !w_.output.is<float>();
        rope_.style = hp_.architecture == Architecture::llama ? rayo::RopeStyle::adjacent : rayo::RopeStyle::halves;
        rope_.n_dims = static_cast<int>(hp_.rope_dims);
        rope_.freq_base = hp_.rope_base;
        rope_.freq_factors = w_.rope_factors;
    }

    [[nodiscard]] Hyperparameters const& hyperparameters() const noexcept { return hp_; }
    void set_decode_capture(bool on) {
        capture_decode_ = on;
        graphs_.clear();
    }
    [[nodiscard]] rayo::Device device() const noexcept { return device_; }
    [[nodiscard]] std::size_t weight_bytes() const noexcept { return w_.device_bytes; }
    [[nodiscard]] std::size_t cache_bytes() const noexcept {
        std::size_t bytes = 0;
        for (std::size_t l = 0; l < k_cache_.size(); ++l) bytes += k_cache_[l].bytes() + v_cache_[l].bytes();
        return bytes;
    }

    rayo::FTensor forward(std::span<std::int32_t const> tokens, std::size_t pos, bool all_logits = false) {
        check_request(tokens, pos);
        auto const n = static_cast<std::int64_t>(tokens.size());
        // The ids and their positions in one upload.
        std::vector<std::int32_t> host(tokens.begin(), tokens.end());
        for (std::size_t i = 0; i < tokens.size(); ++i) host.push_back(static_cast<std::int32_t>(pos + i));
        auto const ids_positions =
            rayo::Tensor<std::int32_t>::from(std::span<std::int32_t const>(host), rayo::Shape{2, n}, device_);
        rayo::Tensor<std::int32_t> const ids = ids_positions.slice(0, 1).reshape({n});
        rayo::Tensor<std::int32_t> const positions = ids_positions.slice(1, 2).reshape({n});
        bool const windowed = hp_.sliding_window != 0 && pos + 1 > hp_.sliding_window;
        if (n == 1 && !all_logits && !windowed) return decode_step(ids_positions.reshape({2}), pos);
        rayo::FTensor x = w_.embeddings.rows(ids);
        for (std::size_t l = 0; l < w_.layers.size(); ++l) {
            x = rayo::add(x, attention_block(l, x, positions, pos));
            x = rayo::add(x, feed_forward(w_.layers[l], x));
        }
        if (!all_logits) x = x.slice(n - 1, n);
        rayo::FTensor logits = w_.output.apply(rayo::rms_norm(x, w_.output_norm, hp_.rms_eps));
        return all_logits ? logits : logits.reshape({static_cast<std::int64_t>(hp_.vocab)});
    }

private:
    // [context, kv_heads, head_dim] per layer, keys and values. Positions are int32; a cache
    // the device cannot hold is its OutOfMemory, raised when allocated.
    [[nodiscard]] rayo::Shape kv_cache_shape() const {
        constexpr auto max_position = static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());
        if (hp_.context > max_position)
            throw ModelError("a context of " + std::to_string(hp_.context) +
                             " tokens (llama.context_length) is more than " + std::to_string(max_position) +
                             " positions");
        return rayo::Shape{hp_.context, hp_.kv_heads, hp_.head_dim};
    }

    void check_request(std::span<std::int32_t const> tokens, std::size_t pos) const {
        if (tokens.empty()) throw ModelError("no tokens to run");
        for (std::size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= hp_.vocab)
                throw ModelError("token " + std::to_string(tokens[i]) + " (at " + std::to_string(i) +
                                 ") is outside the vocabulary of " + std::to_string(hp_.vocab) + " tokens");
        if (pos + tokens.size() > hp_.context)
            throw ModelError(std::to_string(pos + tokens.size()) + " tokens do not fit the context of " +
                             std::to_string(hp_.context));
    }

    // rms_norm, q/k/v, rope, the new keys and values into the cache, attention over the cache,
    // the output projection.
    rayo::FTensor attention_block(std::size_t l, rayo::FTensor const& x, rayo::Tensor<std::int32_t> const& positions,
                                  std::size_t pos) {
        Layer const& layer = w_.layers[l];
        auto const n = x.shape()[0];
        auto const heads = static_cast<std::int64_t>(hp_.heads), kv_heads = static_cast<std::int64_t>(hp_.kv_heads),
                   hd = static_cast<std::int64_t>(hp_.head_dim);
        std::vector<rayo::FTensor> const qkv = layer.qkv.apply(rayo::rms_norm(x, layer.attn_norm, hp_.rms_eps));
        rayo::FTensor q = qkv[0].reshape({n, heads, hd}), k = qkv[1].reshape({n, kv_heads, hd});
        if (layer.q_norm) {
            q = rayo::rms_norm(q, *layer.q_norm, hp_.rms_eps);
            k = rayo::rms_norm(k, *layer.k_norm, hp_.rms_eps);
        }
        q = rayo::rope(q, positions, rope_);
        k = rayo::rope(k, positions, rope_);
        auto const end = static_cast<std::int64_t>(pos) + n;
        rayo::copy_into(k, k_cache_[l].slice(static_cast<std::int64_t>(pos), end));
        rayo::copy_into(qkv[2].reshape({n, kv_heads, hd}), v_cache_[l].slice(static_cast<std::int64_t>(pos), end));
        rayo::AttentionParams params = causal();
        std::int64_t const first = window_params(pos, static_cast<std::size_t>(n), params);
        rayo::FTensor const keys = k_cache_[l].slice(first, end), values = v_cache_[l].slice(first, end);
        rayo::FTensor const a =
            half_attention_ ? rayo::cast<float>(rayo::attention(rayo::cast<rayo::half>(q), rayo::cast<rayo::half>(keys),
                                                                rayo::cast<rayo::half>(values), params))
                            : rayo::attention(q, keys, values, params);
        return layer.o.apply(a.reshape({n, heads * hd}));
    }

    // The first cache row the queries at pos..pos + n - 1 see, and in `params` what hides the rest
    // under a sliding window: key j is seen by the query at position p when p - window < j ≤ p.
    [[nodiscard]] std::int64_t window_params(std::size_t pos, std::size_t n, rayo::AttentionParams& params) const {
        std::size_t const w = hp_.sliding_window;
        if (w == 0 || pos + n <= w) return 0;
        std::size_t const first = pos + 1 > w ? pos + 1 - w : 0, keys = pos + n - first;
        params.query_offset = static_cast<std::int64_t>(pos - first);
        std::vector<float> mask(n * keys, 0.0f);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < keys && first + j + w <= pos + i; ++j)
                mask[i * keys + j] = -std::numeric_limits<float>::infinity();
        params.mask =
            rayo::FTensor::from(std::span<float const>(mask),
                                rayo::Shape{static_cast<std::int64_t>(n), static_cast<std::int64_t>(keys)}, device_);
        return static_cast<std::int64_t>(first);
    }

    // down(swiglu(gate(h), up(h))) = down(silu(gate(h)) · up(h)) of h = rms_norm(x).
    rayo::FTensor feed_forward(Layer const& layer, rayo::FTensor const& x) const {
        std::vector<rayo::FTensor> const gate_up = layer.gate_up.apply(rayo::rms_norm(x, layer.ffn_norm, hp_.rms_eps));
        return layer.down.apply(rayo::swiglu(gate_up[0], gate_up[1]));
    }

    static rayo::AttentionParams causal() {
        rayo::AttentionParams p;
        p.causal = true;  // the queries are the cache's last rows: each sees the keys up to its own
        return p;
    }

    // The buffers of one decode step, kept between steps: a step then allocates nothing but its
    // id upload, and runs its ops in place where they allow it. `step` holds the token's id and
    // position, which every op of the step reads from the device.
    struct DecodeBuffers {
        rayo::FTensor x, qkv, attended, y, gate_up, logits;
        rayo::Tensor<std::int32_t> step, position;  // position: step's second element
    };

    DecodeBuffers& decode_buffers() {
        if (!decode_) {
            auto const d = static_cast<std::int64_t>(hp_.width), f = static_cast<std::int64_t>(hp_.ffn_width);
            auto const q = static_cast<std::int64_t>(hp_.heads * hp_.head_dim);
            auto const make = [&](rayo::Shape shape) { return rayo::FTensor::empty(std::move(shape), device_); };
            auto const step = rayo::Tensor<std::int32_t>::zeros(rayo::Shape{2}, device_);
            decode_ = DecodeBuffers{.x = make({1, d}),
                                    .qkv = make({w_.layers.front().qkv.rows()}),
                                    .attended = make({1, q}),
                                    .y = make({1, d}),
                                    .gate_up = make({2 * f}),
                                    .logits = make({static_cast<std::int64_t>(hp_.vocab)}),
                                    .step = step,
                                    .position = step.slice(1, 2)};
        }
        return *decode_;
    }

    // A decode step's ops of layer l before its attention (rms_norm, q/k/v, rope of q and k, k and
    // v into the cache at the position) and after it (the output projection with the residual as
    // its bias, rms_norm, the feed-forward with the residual). q and k, neighbours in the
    // projection's output, turn in place in one rope; then k and v, neighbours too, go into the
    // cache in one index_copy. rms_norm and swiglu are formed by the products that read them
    // (rms_norm_linear, swiglu_linear). The residual stream passes between x and y.
    void before_attention(std::size_t l) {
        DecodeBuffers& b = *decode_;
        Layer const& layer = w_.layers[l];
        auto const heads = static_cast<std::int64_t>(hp_.heads), kv_heads = static_cast<std::int64_t>(hp_.kv_heads),
                   hd = static_cast<std::int64_t>(hp_.head_dim);
        rayo::FTensor const qk = b.qkv.slice(0, (heads + kv_heads) * hd).reshape({1, heads + kv_heads, hd});
        rayo::FTensor const kv = b.qkv.slice(heads * hd, (heads + 2 * kv_heads) * hd).reshape({2, 1, kv_heads, hd});
        layer.qkv.apply_one_normed_into(b.x, layer.attn_norm, hp_.rms_eps, b.qkv);
        if (layer.q_norm) {
            rayo::FTensor const heads_rows = qk.reshape({heads + kv_heads, hd});
            rayo::FTensor const q = heads_rows.slice(0, heads), k = heads_rows.slice(heads, heads + kv_heads);
            rayo::rms_norm_into(q, *layer.q_norm, hp_.rms_eps, q);
            rayo::rms_norm_into(k, *layer.k_norm, hp_.rms_eps, k);
        }
        rayo::rope_into(qk, b.position, rope_, qk);
        rayo::index_copy_into(kv, 1, b.position, kv_cache_[l]);
    }
    void after_attention(std::size_t l) {
        DecodeBuffers& b = *decode_;
        Layer const& layer = w_.layers[l];
        auto const f = static_cast<std::int64_t>(hp_.ffn_width), d = static_cast<std::int64_t>(hp_.width);
        rayo::FTensor const gate = b.gate_up.slice(0, f).reshape({1, f}),
                            up = b.gate_up.slice(f, 2 * f).reshape({1, f});
        layer.o.apply_into(b.attended, b.x.reshape({d}), b.y);
        layer.gate_up.apply_one_normed_into(b.y, layer.ffn_norm, hp_.rms_eps, b.gate_up);
        layer.down.apply_swiglu_into(gate, up, b.y.reshape({d}), b.x);
    }

    // The keys a decode step's attentions span: the cache's rows up to the next multiple of
    // decode_window past the position, which the attention reads from the device and which hides
    // the rows past it, so that one sequence of ops (and one capture) serves decode_window positions.
    static constexpr std::size_t decode_window = 256;

    // A whole decode step of the token whose id and position are in the decode buffers' `step`,
    // with attentions over the cache's first `keys` rows.
    void decode_ops(std::size_t keys) {
        DecodeBuffers& b = *decode_;
        auto const heads = static_cast<std::int64_t>(hp_.heads), hd = static_cast<std::int64_t>(hp_.head_dim);
        auto const span = static_cast<std::int64_t>(keys);
        rayo::FTensor const q = b.qkv.slice(0, heads * hd).reshape({1, heads, hd});
        rayo::AttentionParams attend = causal();
        attend.query_position = b.position;
        w_.embeddings.rows_into(b.step.slice(0, 1), b.x);
        for (std::size_t l = 0; l < w_.layers.size(); ++l) {
            before_attention(l);
            rayo::attention_into(q, k_cache_[l].slice(0, span), v_cache_[l].slice(0, span), attend,
                                 b.attended.reshape({1, heads, hd}));
            after_attention(l);
        }
        w_.output.apply_normed_into(b.x, w_.output_norm, hp_.rms_eps,
                                    b.logits.reshape({1, static_cast<std::int64_t>(hp_.vocab)}));
    }

    // The decode step over `keys` cache rows recorded once (rayo::capture) on a GPU; null where
    // capture is off, or the device cannot record one (said once; the steps then run their ops).
    rayo::Graph* decode_graph(std::size_t keys) {
        if (!capture_decode_ || device_.kind() == rayo::DeviceKind::cpu) return nullptr;
        for (auto& [span, graph] : graphs_)
            if (span == keys) return &graph;
        try {
            graphs_.emplace_back(keys, rayo::capture(device_, [&] { decode_ops(keys); }));
        } catch (rayo::Error const& e) {
            graphs_.clear();
            capture_decode_ = false;
            std::fprintf(stderr, "rayo-llama: decoding without capture on %s: %s\n", device_.id().c_str(), e.what());
            return nullptr;
        }
        return &graphs_.back().second;
    }

    // One token at `pos` through the model with the ops writing into the decode buffers: its id and
    // position go to the device, then the step's ops run (or replay from decode_graph()).
    rayo::FTensor decode_step(rayo::Tensor<std::int32_t> const& ids_positions, std::size_t pos) {
        DecodeBuffers& b = decode_buffers();
        rayo::copy_into(ids_positions, b.step);
        std::size_t const keys = std::min(hp_.context, (pos / decode_window + 1) * decode_window);
        if (rayo::Graph* graph = decode_graph(keys))
            graph->replay();
        else
            decode_ops(keys);
        return b.logits;
    }

    Hyperparameters hp_;
    rayo::Device device_;
    Weights w_;
    // A layer's keys and values in one tensor [2, context, kv_heads, head_dim], so that a decode
    // step writes both with one index_copy; k_cache_ and v_cache_ are its two halves.
    std::vector<rayo::FTensor> kv_cache_, k_cache_, v_cache_;
    rayo::RopeParams rope_;
    // A prompt's attention runs on the GPUs' tensor cores in f16 (its queries, keys and values
    // rounded as llama.cpp's default f16 cache holds them), except for a model of f32 weights.
    bool half_attention_ = false;
    std::optional<DecodeBuffers> decode_;
    bool capture_decode_ = false;
    std::vector<std::pair<std::size_t, rayo::Graph>> graphs_;  // by the keys their attentions span
};

Model::Model(gguf::File const& file, Device device, LoadProgress progress, std::size_t context)
    : impl_(std::make_unique<Impl>(file, device, std::move(progress), context)) {}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

Hyperparameters const& Model::hyperparameters() const noexcept { return impl_->hyperparameters(); }
Device Model::device() const noexcept { return impl_->device(); }
std::size_t Model::weight_bytes() const noexcept { return impl_->weight_bytes(); }
std::size_t Model::cache_bytes() const noexcept { return impl_->cache_bytes(); }
FTensor Model::forward(std::span<std::int32_t const> tokens, std::size_t pos, bool all_logits) {
    return impl_->forward(tokens, pos, all_logits);
}
void Model::set_decode_capture(bool on) { impl_->set_decode_capture(on); }

}  // namespace rayo::llm
