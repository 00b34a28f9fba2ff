// A Llama-family language model from a GGUF file, on any rayo device, with rayo's public API only:
// the hyper-parameters and tensor names as llama.cpp writes them (`llama.*` keys, `blk.N.attn_q`,
// ...), weights loaded once onto the device straight from the mapped file, a KV cache on the
// device, and a forward pass of embedding → per layer (rms_norm, q/k/v, rope, attention, output
// projection, rms_norm, SwiGLU feed-forward) → rms_norm → logits.
//
//   auto file = rayo::gguf::File::open("model.gguf");
//   rayo_llama::Model model(file, rayo::Device::best());
//   rayo::FTensor logits = model.forward(prompt, 0);   // [vocab]: the last token's logits
//
// llama.cpp's converter reorders the rows of each head of Q and K so that its rope on adjacent
// pairs reproduces Hugging Face's rotate_half rope; so this model rotates adjacent pairs
// (RopeStyle::adjacent) on the file's weights as they are.
#pragma once

#include <rayo/rayo.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rayo_llama {

// What is wrong with a model file or a request (a missing key, a shape that disagrees, a token
// outside the vocabulary): rayo-llama prints it and exits with code 2.
class ModelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// ---- hyper-parameters --------------------------------------------------------------------------------

struct Hyperparameters {
    std::size_t layers = 0, width = 0, ffn_width = 0, heads = 0, kv_heads = 0, head_dim = 0;
    std::size_t rope_dims = 0, context = 0, vocab = 0;
    float rope_base = 10000.0f, rms_eps = 1e-5f;
};

namespace detail {

// A metadata number of any integer type (writers differ: u32, i32, u64).
inline std::optional<std::uint64_t> integer(rayo::gguf::Metadata const& md, std::string_view key) {
    rayo::gguf::Value const* v = md.find(key);
    if (!v) return std::nullopt;
    return std::visit(
        [&](auto const& x) -> std::uint64_t {
            using X = std::decay_t<decltype(x)>;
            if constexpr (std::is_integral_v<X> && !std::is_same_v<X, bool>) {
                if (x < 0) throw ModelError("metadata " + std::string(key) + " is negative: " + std::to_string(x));
                return static_cast<std::uint64_t>(x);
            } else {
                throw ModelError("metadata " + std::string(key) + " should be an integer, it is " +
                                 std::string(rayo::gguf::to_string(rayo::gguf::type_of(*v))));
            }
        },
        *v);
}

// A float or double as the shortest text that reads back as it.
template <std::floating_point F>
std::string number(F x) {
    char buf[64];
    auto const r = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, r.ptr);
}

inline std::size_t required(rayo::gguf::Metadata const& md, std::string_view key) {
    std::optional<std::uint64_t> const v = integer(md, key);
    if (!v) throw ModelError("the file has no " + std::string(key) + " (a llama model needs it)");
    if (*v == 0) throw ModelError("metadata " + std::string(key) + " is 0");
    return static_cast<std::size_t>(*v);
}

inline float real(rayo::gguf::Metadata const& md, std::string_view key, float fallback) {
    rayo::gguf::Value const* v = md.find(key);
    if (!v) return fallback;
    if (auto const* f = std::get_if<float>(v)) return *f;
    if (auto const* d = std::get_if<double>(v)) {
        if (std::isfinite(*d) && std::abs(*d) > std::numeric_limits<float>::max())
            throw ModelError("metadata " + std::string(key) + " = " + number(*d) + " is out of the range of a float");
        return static_cast<float>(*d);
    }
    throw ModelError("metadata " + std::string(key) + " should be a float, it is " +
                     std::string(rayo::gguf::to_string(rayo::gguf::type_of(*v))));
}

}  // namespace detail

// The `llama.*` keys as llama.cpp reads them. The vocabulary's size comes from the token table
// (`token_embd`), which every file has; head_dim is width / heads.
inline Hyperparameters read_hyperparameters(rayo::gguf::File const& file) {
    rayo::gguf::Metadata const& md = file.metadata();
    rayo::gguf::Value const* arch = md.find("general.architecture");
    if (!arch || !std::holds_alternative<std::string>(*arch))
        throw ModelError("the file has no general.architecture string");
    if (std::get<std::string>(*arch) != "llama")
        throw ModelError("the file's architecture is '" + rayo::gguf::printable(std::get<std::string>(*arch)) +
                         "'; rayo-llama runs 'llama'");
    Hyperparameters h;
    h.layers = detail::required(md, "llama.block_count");
    h.width = detail::required(md, "llama.embedding_length");
    h.ffn_width = detail::required(md, "llama.feed_forward_length");
    h.heads = detail::required(md, "llama.attention.head_count");
    h.kv_heads = detail::integer(md, "llama.attention.head_count_kv").value_or(h.heads);
    h.context = detail::required(md, "llama.context_length");
    if (h.kv_heads == 0 || h.heads % h.kv_heads != 0)
        throw ModelError("llama.attention.head_count_kv = " + std::to_string(h.kv_heads) +
                         " does not divide llama.attention.head_count = " + std::to_string(h.heads));
    if (h.width % h.heads != 0)
        throw ModelError("llama.embedding_length = " + std::to_string(h.width) +
                         " is not a multiple of llama.attention.head_count = " + std::to_string(h.heads));
    h.head_dim = h.width / h.heads;
    h.rope_dims = detail::integer(md, "llama.rope.dimension_count").value_or(h.head_dim);
    if (h.rope_dims == 0 || h.rope_dims > h.head_dim || h.rope_dims % 2 != 0)
        throw ModelError("llama.rope.dimension_count = " + std::to_string(h.rope_dims) +
                         " must be even, non-zero and at most the head size " + std::to_string(h.head_dim));
    h.rope_base = detail::real(md, "llama.rope.freq_base", 10000.0f);
    if (!std::isfinite(h.rope_base) || !(h.rope_base > 0.0f))
        throw ModelError("llama.rope.freq_base = " + detail::number(h.rope_base) + " must be a finite number > 0");
    h.rms_eps = detail::real(md, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (!std::isfinite(h.rms_eps) || !(h.rms_eps >= 0.0f))
        throw ModelError("llama.attention.layer_norm_rms_epsilon = " + detail::number(h.rms_eps) +
                         " must be a finite number >= 0");
    // Each layer has 9 tensors; checked before anything is sized by the layer count.
    if (h.layers > file.tensors().size() / 9)
        throw ModelError("llama.block_count = " + std::to_string(h.layers) + " needs 9 tensors a layer; the file holds " +
                         std::to_string(file.tensors().size()) + " tensors");
    rayo::gguf::TensorInfo const* embd = file.find("token_embd.weight");
    if (!embd) throw ModelError("the file has no tensor token_embd.weight");
    if (embd->shape.rank() != 2 || static_cast<std::size_t>(embd->shape[1]) != h.width)
        throw ModelError("token_embd.weight has shape " + embd->shape.to_string() + ", expected [vocab, " +
                         std::to_string(h.width) + "]");
    h.vocab = static_cast<std::size_t>(embd->shape[0]);
    if (h.vocab == 0 || h.vocab > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw ModelError("token_embd.weight has shape " + embd->shape.to_string() +
                         ": the vocabulary must hold 1 to 2^31 - 1 tokens");
    return h;
}

// ---- weights -------------------------------------------------------------------------------------------

// A weight matrix [out, in] of any type linear() takes, as the file stores it.
class Weight {
public:
    using Any = std::variant<rayo::Tensor<float>, rayo::Tensor<rayo::half>, rayo::Tensor<rayo::bfloat16>,
                             rayo::Tensor<rayo::q4_k>, rayo::Tensor<rayo::q6_k>>;

    explicit Weight(Any w) : w_(std::move(w)) {}

    // x [rows, in] · wᵀ -> f32 [rows, out].
    [[nodiscard]] rayo::FTensor apply(rayo::FTensor const& x) const {
        return std::visit([&](auto const& w) { return rayo::linear(x, w); }, w_);
    }
    // x [rows, in] · wᵀ + bias [out] in every row -> f32 [rows, out].
    void apply_into(rayo::FTensor const& x, rayo::FTensor const& bias, rayo::FTensor const& out) const {
        std::visit([&](auto const& w) { rayo::linear_into(x, w, bias, out); }, w_);
    }
    // rms_norm(x, gain, eps) · wᵀ, in one op.
    void apply_normed_into(rayo::FTensor const& x, rayo::FTensor const& gain, float eps, rayo::FTensor const& out) const {
        std::visit([&](auto const& w) { rayo::rms_norm_linear_into(x, gain, eps, w, out); }, w_);
    }
    // swiglu(gate, up) · wᵀ + bias, in one op.
    void apply_swiglu_into(rayo::FTensor const& gate, rayo::FTensor const& up, rayo::FTensor const& bias,
                           rayo::FTensor const& out) const {
        std::visit([&](auto const& w) { rayo::swiglu_linear_into(gate, up, w, bias, out); }, w_);
    }
    // The rows `ids` of the matrix as f32 (the token embeddings).
    [[nodiscard]] rayo::FTensor rows(rayo::Tensor<std::int32_t> const& ids) const {
        rayo::FTensor out = rayo::FTensor::empty(rayo::Shape{ids.shape()[0], shape()[1]}, ids.device());
        rows_into(ids, out);
        return out;
    }
    void rows_into(rayo::Tensor<std::int32_t> const& ids, rayo::FTensor const& out) const {
        std::visit(
            [&](auto const& w) {
                if constexpr (std::is_same_v<decltype(rayo::embedding(w, ids)), rayo::FTensor>) rayo::embedding_into(w, ids, out);
                else rayo::cast_into(rayo::embedding(w, ids), out);
            },
            w_);
    }
    // Rows [begin, end) of the matrix, a view.
    [[nodiscard]] Weight row_range(std::int64_t begin, std::int64_t end) const {
        return std::visit([&](auto const& w) { return Weight(w.slice(begin, end)); }, w_);
    }
    template <class T>
    [[nodiscard]] bool is() const noexcept { return std::holds_alternative<rayo::Tensor<T>>(w_); }
    [[nodiscard]] rayo::Shape const& shape() const {
        return std::visit([](auto const& w) -> rayo::Shape const& { return w.shape(); }, w_);
    }
private:
    Any w_;
};

// Several projections of one input (q, k and v; gate and up), stored as separate matrices. Those of
// one type that follow each other are joined by rows when the weights load, so that one linear
// reads the input once and launches once for all of them: in a decode step, where each matrix
// product is a short GEMV, the launches saved are a large share of the step.
class Projections {
public:
    struct Group {
        Weight weight;       // its rows: those of `parts` projections, one after another
        std::size_t parts;   // how many projections it holds
    };

    Projections(std::vector<Group> groups, std::vector<std::int64_t> part_rows)
        : groups_(std::move(groups)), part_rows_(std::move(part_rows)) {}

    // The rows of every projection together.
    [[nodiscard]] std::int64_t rows() const {
        std::int64_t n = 0;
        for (std::int64_t r : part_rows_) n += r;
        return n;
    }

    // rms_norm(x [1, in], gain, eps) → out [rows()]: each projection's values at its rows' place, in
    // order, each group's product forming the normalised input itself.
    void apply_one_normed_into(rayo::FTensor const& x, rayo::FTensor const& gain, float eps, rayo::FTensor const& out) const {
        std::int64_t at = 0;
        std::size_t part = 0;
        for (Group const& g : groups_) {
            std::int64_t rows = 0;
            for (std::size_t i = 0; i < g.parts; ++i) rows += part_rows_[part++];
            g.weight.apply_normed_into(x, gain, eps, out.slice(at, at + rows).reshape({1, rows}));
            at += rows;
        }
    }
    // x [n, in] → one f32 [n, rows] per projection, each from its own rows of the joined weight
    // (a view): for many rows of x a GEMM each costs no more, and no output needs splitting.
    [[nodiscard]] std::vector<rayo::FTensor> apply(rayo::FTensor const& x) const {
        std::vector<rayo::FTensor> out;
        std::size_t part = 0;
        for (Group const& g : groups_) {
            std::int64_t at = 0;
            for (std::size_t i = 0; i < g.parts; ++i, ++part) {
                out.push_back(g.weight.row_range(at, at + part_rows_[part]).apply(x));
                at += part_rows_[part];
            }
        }
        return out;
    }
private:
    std::vector<Group> groups_;
    std::vector<std::int64_t> part_rows_;
};

struct Layer {
    rayo::FTensor attn_norm, ffn_norm;
    Projections qkv, gate_up;  // q | k | v and gate | up
    Weight o, down;
};

// Reports the bytes loaded so far out of the total, for a progress line.
using LoadProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Loads the file's tensors by name and checks each shape against the hyper-parameters.
class WeightLoader {
public:
    WeightLoader(rayo::gguf::File const& file, rayo::Device device, LoadProgress progress)
        : file_(file), device_(device), progress_(std::move(progress)) {
        for (rayo::gguf::TensorInfo const& t : file.tensors()) total_ += t.bytes;
    }

    [[nodiscard]] bool has(std::string const& name) const { return file_.find(name) != nullptr; }
    // The bytes of the tensors loaded onto the device so far.
    [[nodiscard]] std::size_t device_bytes() const noexcept { return device_bytes_; }

    // A 2-D weight of shape [rows, cols].
    Weight matrix(std::string const& name, std::size_t rows, std::size_t cols) {
        return joined({{name, rows}}, cols);
    }

    // The matrices `parts` (name, rows), each of `cols` columns, those of one type that follow
    // each other joined by rows.
    Projections projections(std::vector<std::pair<std::string, std::size_t>> const& parts, std::size_t cols) {
        std::vector<Projections::Group> groups;
        std::vector<std::int64_t> rows;
        for (std::size_t i = 0; i < parts.size();) {
            std::size_t j = i + 1;
            while (j < parts.size() && checked(parts[j], cols).dtype == checked(parts[i], cols).dtype) ++j;
            groups.push_back({joined({parts.begin() + static_cast<std::ptrdiff_t>(i),
                                      parts.begin() + static_cast<std::ptrdiff_t>(j)}, cols), j - i});
            for (; i < j; ++i) rows.push_back(static_cast<std::int64_t>(parts[i].second));
        }
        return Projections(std::move(groups), std::move(rows));
    }

    // A 1-D f32 vector of `n` values (norm weights, rope frequency factors).
    rayo::FTensor vector(std::string const& name, std::size_t n) {
        rayo::gguf::TensorInfo const& info = find(name);
        expect_shape(info, {static_cast<std::int64_t>(n)});
        if (info.dtype != rayo::DType::f32) unsupported(info);
        return load<float>({{name, n}}, 0);
    }

private:
    rayo::gguf::TensorInfo const& find(std::string const& name) const {
        rayo::gguf::TensorInfo const* info = file_.find(name);
        if (!info) throw ModelError("the file has no tensor " + name);
        return *info;
    }

    // The tensor `part` names, checked to be a matrix of part.second rows and `cols` columns of a
    // type a weight may have.
    rayo::gguf::TensorInfo const& checked(std::pair<std::string, std::size_t> const& part, std::size_t cols) const {
        rayo::gguf::TensorInfo const& info = find(part.first);
        expect_shape(info, {static_cast<std::int64_t>(part.second), static_cast<std::int64_t>(cols)});
        if (!info.dtype) unsupported(info);
        switch (*info.dtype) {
            case rayo::DType::f32: case rayo::DType::f16: case rayo::DType::bf16: case rayo::DType::q4_k:
            case rayo::DType::q6_k: return info;
            default: unsupported(info);
        }
    }

    // The matrices `parts` (all of one type) as one weight, joined by rows.
    Weight joined(std::vector<std::pair<std::string, std::size_t>> const& parts, std::size_t cols) {
        switch (*checked(parts.front(), cols).dtype) {
            case rayo::DType::f32: return Weight(load<float>(parts, cols));
            case rayo::DType::f16: return Weight(load<rayo::half>(parts, cols));
            case rayo::DType::bf16: return Weight(load<rayo::bfloat16>(parts, cols));
            case rayo::DType::q4_k: return Weight(load<rayo::q4_k>(parts, cols));
            default: return Weight(load<rayo::q6_k>(parts, cols));
        }
    }

    static void expect_shape(rayo::gguf::TensorInfo const& info, rayo::Shape const& want) {
        if (info.shape != want)
            throw ModelError(info.name + " has shape " + info.shape.to_string() + "; the hyper-parameters give " +
                             want.to_string());
    }

    [[noreturn]] static void unsupported(rayo::gguf::TensorInfo const& info) {
        throw rayo::Unsupported("tensor " + info.name + " is of type " + std::string(info.type_name) +
                                "; rayo-llama takes f32, f16, bf16, q4_k and q6_k weights (f32 norms)");
    }

    // The tensors `parts` loaded one after another into one tensor: [rows] for a vector (cols 0),
    // [Σ rows, cols] for matrices.
    template <class T>
    rayo::Tensor<T> load(std::vector<std::pair<std::string, std::size_t>> const& parts, std::size_t cols) {
        std::int64_t total = 0;
        for (auto const& part : parts) total += static_cast<std::int64_t>(part.second);
        rayo::Tensor<T> t = rayo::Tensor<T>::empty(
            cols ? rayo::Shape{total, static_cast<std::int64_t>(cols)} : rayo::Shape{total}, device_);
        std::int64_t at = 0;
        for (auto const& [name, rows] : parts) {
            file_.load_into(name, t.slice(at, at + static_cast<std::int64_t>(rows)));
            at += static_cast<std::int64_t>(rows);
            done_ += find(name).bytes;
            if (progress_) progress_(done_, total_);
        }
        device_bytes_ += t.bytes();
        return t;
    }

    rayo::gguf::File const& file_;
    rayo::Device device_;
    LoadProgress progress_;
    std::uint64_t done_ = 0, total_ = 0;
    std::size_t device_bytes_ = 0;
};

// ---- the model -----------------------------------------------------------------------------------------

// Every weight of the model, checked against the hyper-parameters.
struct Weights {
    Weight embeddings;
    std::vector<Layer> layers;
    rayo::FTensor output_norm;
    Weight output;  // the embeddings' own tensor when the file has no `output` (tied weights)
    std::optional<rayo::FTensor> rope_factors;
    std::size_t device_bytes = 0;  // of every tensor above, each counted once
};

inline Weights load_weights(rayo::gguf::File const& file, Hyperparameters const& hp, rayo::Device device,
                            LoadProgress progress) {
    WeightLoader w(file, device, std::move(progress));
    std::size_t const d = hp.width, hd = hp.head_dim;
    Weight const embeddings = w.matrix("token_embd.weight", hp.vocab, d);
    Weights out{.embeddings = embeddings,
                .layers = {},
                .output_norm = rayo::FTensor::empty(rayo::Shape{0}),
                .output = embeddings,  // shares the tensor, not a second copy on the device
                .rope_factors = {}};
    out.layers.reserve(hp.layers);
    for (std::size_t i = 0; i < hp.layers; ++i) {
        std::string const p = "blk." + std::to_string(i) + ".";
        out.layers.push_back(Layer{
            .attn_norm = w.vector(p + "attn_norm.weight", d),
            .ffn_norm = w.vector(p + "ffn_norm.weight", d),
            .qkv = w.projections({{p + "attn_q.weight", hp.heads * hd},
                                  {p + "attn_k.weight", hp.kv_heads * hd},
                                  {p + "attn_v.weight", hp.kv_heads * hd}}, d),
            .gate_up = w.projections({{p + "ffn_gate.weight", hp.ffn_width}, {p + "ffn_up.weight", hp.ffn_width}}, d),
            .o = w.matrix(p + "attn_output.weight", d, hp.heads * hd),
            .down = w.matrix(p + "ffn_down.weight", d, hp.ffn_width)});
    }
    out.output_norm = w.vector("output_norm.weight", d);
    if (w.has("output.weight")) out.output = w.matrix("output.weight", hp.vocab, d);
    if (w.has("rope_freqs.weight")) out.rope_factors = w.vector("rope_freqs.weight", hp.rope_dims / 2);
    out.device_bytes = w.device_bytes();
    return out;
}

class Model {
public:
    // Loads every weight onto `device` and allocates a KV cache of the model's context length (or
    // `context` tokens when smaller and non-zero).
    Model(rayo::gguf::File const& file, rayo::Device device, LoadProgress progress = {}, std::size_t context = 0)
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
        rope_.style = rayo::RopeStyle::adjacent;
        rope_.n_dims = static_cast<int>(hp_.rope_dims);
        rope_.freq_base = hp_.rope_base;
        rope_.freq_factors = w_.rope_factors;
    }

    [[nodiscard]] Hyperparameters const& hyperparameters() const noexcept { return hp_; }
    // Whether a GPU's decode steps replay from captures (rayo::capture: one a decode_window of
    // positions) or issue every op (the default).
    void set_decode_capture(bool on) {
        capture_decode_ = on;
        graphs_.clear();
    }
    [[nodiscard]] rayo::Device device() const noexcept { return device_; }
    // The bytes the weights take on the device.
    [[nodiscard]] std::size_t weight_bytes() const noexcept { return w_.device_bytes; }
    // The bytes the KV cache takes on the device: keys and values of every layer for the whole context.
    [[nodiscard]] std::size_t cache_bytes() const noexcept {
        std::size_t bytes = 0;
        for (std::size_t l = 0; l < k_cache_.size(); ++l) bytes += k_cache_[l].bytes() + v_cache_[l].bytes();
        return bytes;
    }

    // Runs `tokens` at positions pos, pos + 1, ... (their keys and values join the cache) and
    // returns the logits f32 [tokens, vocab] (all_logits) or [vocab] of the last token.
    rayo::FTensor forward(std::span<std::int32_t const> tokens, std::size_t pos, bool all_logits = false) {
        check_request(tokens, pos);
        auto const n = static_cast<std::int64_t>(tokens.size());
        // The ids and their positions in one upload.
        std::vector<std::int32_t> host(tokens.begin(), tokens.end());
        for (std::size_t i = 0; i < tokens.size(); ++i) host.push_back(static_cast<std::int32_t>(pos + i));
        auto const ids_positions = rayo::Tensor<std::int32_t>::from(std::span<std::int32_t const>(host), rayo::Shape{2, n}, device_);
        rayo::Tensor<std::int32_t> const ids = ids_positions.slice(0, 1).reshape({n});
        rayo::Tensor<std::int32_t> const positions = ids_positions.slice(1, 2).reshape({n});
        if (n == 1 && !all_logits) return decode_step(ids_positions.reshape({2}), pos);
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
            throw ModelError("a context of " + std::to_string(hp_.context) + " tokens (llama.context_length) is more than " +
                             std::to_string(max_position) + " positions");
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
        rayo::FTensor const q = rayo::rope(qkv[0].reshape({n, heads, hd}), positions, rope_);
        rayo::FTensor const k = rayo::rope(qkv[1].reshape({n, kv_heads, hd}), positions, rope_);
        auto const end = static_cast<std::int64_t>(pos) + n;
        rayo::copy_into(k, k_cache_[l].slice(static_cast<std::int64_t>(pos), end));
        rayo::copy_into(qkv[2].reshape({n, kv_heads, hd}), v_cache_[l].slice(static_cast<std::int64_t>(pos), end));
        rayo::FTensor const keys = k_cache_[l].slice(0, end), values = v_cache_[l].slice(0, end);
        rayo::FTensor const a =
            half_attention_ ? rayo::cast<float>(rayo::attention(rayo::cast<rayo::half>(q), rayo::cast<rayo::half>(keys),
                                                                rayo::cast<rayo::half>(values), causal()))
                            : rayo::attention(q, keys, values, causal());
        return layer.o.apply(a.reshape({n, heads * hd}));
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
            decode_ = DecodeBuffers{.x = make({1, d}), .qkv = make({w_.layers.front().qkv.rows()}),
                                    .attended = make({1, q}), .y = make({1, d}), .gate_up = make({2 * f}),
                                    .logits = make({static_cast<std::int64_t>(hp_.vocab)}), .step = step,
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
        rayo::rope_into(qk, b.position, rope_, qk);
        rayo::index_copy_into(kv, 1, b.position, kv_cache_[l]);
    }
    void after_attention(std::size_t l) {
        DecodeBuffers& b = *decode_;
        Layer const& layer = w_.layers[l];
        auto const f = static_cast<std::int64_t>(hp_.ffn_width), d = static_cast<std::int64_t>(hp_.width);
        rayo::FTensor const gate = b.gate_up.slice(0, f).reshape({1, f}), up = b.gate_up.slice(f, 2 * f).reshape({1, f});
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
        if (rayo::Graph* graph = decode_graph(keys)) graph->replay();
        else decode_ops(keys);
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

// ---- the vocabulary ------------------------------------------------------------------------------------

// The text of tokens from `tokenizer.ggml.tokens`. SentencePiece vocabularies (`tokenizer.ggml.model`
// "llama"): ▁ is a space and <0xNN> a byte. Byte-level BPE vocabularies ("gpt2": Llama 3's) spell
// each byte as one character (printable ASCII and Latin-1 as themselves, the other bytes as
// U+0100 onwards, in order), which is undone. Empty when the file has no vocabulary.
class Vocabulary {
public:
    explicit Vocabulary(rayo::gguf::File const& file) {
        rayo::gguf::Value const* v = file.metadata().find("tokenizer.ggml.tokens");
        if (!v) return;
        auto const* a = std::get_if<rayo::gguf::Array>(v);
        if (!a || a->type() != rayo::gguf::ValueType::string)
            throw ModelError("tokenizer.ggml.tokens should be an array of strings");
        tokens_ = a->get<std::string>();
        rayo::gguf::Value const* model = file.metadata().find("tokenizer.ggml.model");
        byte_level_ = model && std::holds_alternative<std::string>(*model) && std::get<std::string>(*model) == "gpt2";
    }

    [[nodiscard]] bool empty() const noexcept { return tokens_.empty(); }

    [[nodiscard]] std::string text(std::int32_t id) const {
        if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) return {};
        std::string const& piece = tokens_[static_cast<std::size_t>(id)];
        return byte_level_ ? byte_level_text(piece) : sentencepiece_text(piece);
    }

private:
    static std::string sentencepiece_text(std::string const& piece) {
        if (piece.size() == 6 && piece.starts_with("<0x") && piece.back() == '>') {
            unsigned byte = 0;
            for (char c : std::string_view(piece).substr(3, 2)) {
                int const digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                if (digit < 0) return piece;
                byte = byte * 16 + static_cast<unsigned>(digit);
            }
            return std::string(1, static_cast<char>(byte));
        }
        std::string out;
        constexpr std::string_view space = "\xe2\x96\x81";  // U+2581 ▁
        for (std::size_t i = 0; i < piece.size();) {
            if (piece.compare(i, space.size(), space) == 0) {
                out += ' ';
                i += space.size();
            } else {
                out += piece[i++];
            }
        }
        return out;
    }

    // Whether byte b stands for itself in a byte-level vocabulary.
    static bool spelled_as_itself(unsigned b) { return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae; }

    static std::string byte_level_text(std::string const& piece) {
        std::string out;
        for (std::size_t i = 0; i < piece.size();) {
            // One UTF-8 code point of at most two bytes (the byte characters are below U+0144).
            auto const lead = static_cast<unsigned char>(piece[i]);
            unsigned code = lead;
            std::size_t length = 1;
            if ((lead & 0xe0) == 0xc0 && i + 1 < piece.size() && (static_cast<unsigned char>(piece[i + 1]) & 0xc0) == 0x80) {
                code = ((lead & 0x1fu) << 6) | (static_cast<unsigned char>(piece[i + 1]) & 0x3fu);
                length = 2;
            } else if (lead >= 0x80) {
                return piece;  // not a byte-level spelling: shown as it is
            }
            if (code < 0x100 && spelled_as_itself(code)) {
                out += static_cast<char>(code);
            } else if (code >= 0x100) {
                unsigned n = code - 0x100, b = 0;  // the n-th byte that is not spelled as itself
                for (; b < 0x100; ++b)
                    if (!spelled_as_itself(b) && n-- == 0) break;
                if (b == 0x100) return piece;
                out += static_cast<char>(b);
            } else {
                return piece;
            }
            i += length;
        }
        return out;
    }

    std::vector<std::string> tokens_;
    bool byte_level_ = false;
};

}  // namespace rayo_llama
