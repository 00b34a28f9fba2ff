// Loading a Llama-family file's weights (src/llm/weights.hpp).
#include "llm/weights.hpp"

#include <string>
#include <string_view>

namespace rayo::llm {

namespace {

// Loads the file's tensors by name and checks each shape against the hyper-parameters.
class WeightLoader {
public:
    WeightLoader(gguf::File const& file, rayo::Device device, LoadProgress progress)
        : file_(file), device_(device), progress_(std::move(progress)) {
        for (gguf::TensorInfo const& t : file.tensors()) total_ += t.bytes;
    }

    [[nodiscard]] bool has(std::string const& name) const { return file_.find(name) != nullptr; }
    // The bytes of the tensors loaded onto the device so far.
    [[nodiscard]] std::size_t device_bytes() const noexcept { return device_bytes_; }

    // A 2-D weight of shape [rows, cols].
    Weight matrix(std::string const& name, std::size_t rows, std::size_t cols) { return joined({{name, rows}}, cols); }

    // The matrices `parts` (name, rows), each of `cols` columns, those of one type that follow
    // each other joined by rows.
    // With `biases`, each matrix "NAME.weight" has a bias vector "NAME.bias", joined as the matrices are.
    Projections projections(std::vector<std::pair<std::string, std::size_t>> const& parts, std::size_t cols,
                            bool biases = false) {
        std::vector<Projections::Group> groups;
        std::vector<std::int64_t> rows;
        for (std::size_t i = 0; i < parts.size();) {
            std::size_t j = i + 1;
            while (j < parts.size() && checked(parts[j], cols).dtype == checked(parts[i], cols).dtype) ++j;
            std::vector<std::pair<std::string, std::size_t>> const group(
                parts.begin() + static_cast<std::ptrdiff_t>(i), parts.begin() + static_cast<std::ptrdiff_t>(j));
            groups.push_back({joined(group, cols), j - i, biases ? std::optional(bias_vectors(group)) : std::nullopt});
            for (; i < j; ++i) rows.push_back(static_cast<std::int64_t>(parts[i].second));
        }
        return Projections(std::move(groups), std::move(rows));
    }

    // A 1-D f32 vector of `n` values (norm weights, rope frequency factors).
    rayo::FTensor vector(std::string const& name, std::size_t n) {
        gguf::TensorInfo const& info = find(name);
        expect_shape(info, {static_cast<std::int64_t>(n)});
        if (info.dtype != rayo::DType::f32) unsupported(info);
        return load<float>({{name, n}}, 0);
    }

private:
    // The bias vectors of matrices `parts` ("X.weight" → "X.bias"), f32, joined.
    rayo::FTensor bias_vectors(std::vector<std::pair<std::string, std::size_t>> const& parts) {
        std::vector<std::pair<std::string, std::size_t>> named;
        for (auto const& [name, rows] : parts) {
            std::string const bias = name.substr(0, name.size() - std::string_view(".weight").size()) + ".bias";
            gguf::TensorInfo const& info = find(bias);
            expect_shape(info, {static_cast<std::int64_t>(rows)});
            if (info.dtype != rayo::DType::f32) unsupported(info);
            named.emplace_back(bias, rows);
        }
        return load<float>(named, 0);
    }

    gguf::TensorInfo const& find(std::string const& name) const {
        gguf::TensorInfo const* info = file_.find(name);
        if (!info) throw ModelError("the file has no tensor " + name);
        return *info;
    }

    // The tensor `part` names, checked to be a matrix of part.second rows and `cols` columns of a
    // type a weight may have.
    gguf::TensorInfo const& checked(std::pair<std::string, std::size_t> const& part, std::size_t cols) const {
        gguf::TensorInfo const& info = find(part.first);
        expect_shape(info, {static_cast<std::int64_t>(part.second), static_cast<std::int64_t>(cols)});
        if (!info.dtype) unsupported(info);
        switch (*info.dtype) {
            case rayo::DType::f32:
            case rayo::DType::f16:
            case rayo::DType::bf16:
            case rayo::DType::q4_k:
            case rayo::DType::q6_k:
            case rayo::DType::q8_0:
            case rayo::DType::q4_0:
            case rayo::DType::q5_k: return info;
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
            case rayo::DType::q8_0: return Weight(load<rayo::q8_0>(parts, cols));
            case rayo::DType::q4_0: return Weight(load<rayo::q4_0>(parts, cols));
            case rayo::DType::q5_k: return Weight(load<rayo::q5_k>(parts, cols));
            default: return Weight(load<rayo::q6_k>(parts, cols));
        }
    }

    static void expect_shape(gguf::TensorInfo const& info, rayo::Shape const& want) {
        if (info.shape != want)
            throw ModelError(info.name + " has shape " + info.shape.to_string() + "; the hyper-parameters give " +
                             want.to_string());
    }

    [[noreturn]] static void unsupported(gguf::TensorInfo const& info) {
        throw rayo::Unsupported("tensor " + info.name + " is of type " + std::string(info.type_name) +
                                "; rayo::llm takes f32, f16, bf16, q8_0, q4_0, q4_k, q5_k and q6_k weights "
                                "(f32 norms and biases)");
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

    gguf::File const& file_;
    rayo::Device device_;
    LoadProgress progress_;
    std::uint64_t done_ = 0, total_ = 0;
    std::size_t device_bytes_ = 0;
};

}  // namespace

Weights load_weights(gguf::File const& file, Hyperparameters const& hp, Device device, LoadProgress progress) {
    WeightLoader w(file, device, std::move(progress));
    std::size_t const d = hp.width, hd = hp.head_dim;
    Weight const embeddings = w.matrix("token_embd.weight", hp.vocab, d);
    Weights out{.embeddings = embeddings,
                .layers = {},
                .output_norm = rayo::FTensor::empty(rayo::Shape{0}),
                .output = embeddings,  // shares the tensor, not a second copy on the device
                .rope_factors = {}};
    out.layers.reserve(hp.layers);
    bool const biases = hp.architecture == Architecture::qwen2, qk_norms = hp.architecture == Architecture::qwen3;
    for (std::size_t i = 0; i < hp.layers; ++i) {
        std::string const p = "blk." + std::to_string(i) + ".";
        Layer layer{
            .attn_norm = w.vector(p + "attn_norm.weight", d),
            .ffn_norm = w.vector(p + "ffn_norm.weight", d),
            .qkv = w.projections({{p + "attn_q.weight", hp.heads * hd},
                                  {p + "attn_k.weight", hp.kv_heads * hd},
                                  {p + "attn_v.weight", hp.kv_heads * hd}},
                                 d, biases),
            .gate_up = w.projections({{p + "ffn_gate.weight", hp.ffn_width}, {p + "ffn_up.weight", hp.ffn_width}}, d),
            .o = w.matrix(p + "attn_output.weight", d, hp.heads * hd),
            .down = w.matrix(p + "ffn_down.weight", d, hp.ffn_width),
            .q_norm = std::nullopt,
            .k_norm = std::nullopt};
        if (qk_norms) {
            layer.q_norm = w.vector(p + "attn_q_norm.weight", hd);
            layer.k_norm = w.vector(p + "attn_k_norm.weight", hd);
        }
        out.layers.push_back(std::move(layer));
    }
    out.output_norm = w.vector("output_norm.weight", d);
    if (w.has("output.weight")) out.output = w.matrix("output.weight", hp.vocab, d);
    if (w.has("rope_freqs.weight")) out.rope_factors = w.vector("rope_freqs.weight", hp.rope_dims / 2);
    out.device_bytes = w.device_bytes();
    return out;
}

}  // namespace rayo::llm
