// A model's weights as loaded onto its device (rayo::llm's insides): matrices of any type linear()
// takes, the projections that read one input joined into one matrix, and every tensor of a
// Llama-family file checked against the hyper-parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "rayo/llm/model.hpp"
#include "rayo/rayo.hpp"

namespace rayo::llm {

// A weight matrix [out, in] of any type linear() takes, as the file stores it.
class Weight {
public:
    using Any = std::variant<rayo::Tensor<float>, rayo::Tensor<rayo::half>, rayo::Tensor<rayo::bfloat16>,
                             rayo::Tensor<rayo::q4_k>, rayo::Tensor<rayo::q6_k>, rayo::Tensor<rayo::q8_0>,
                             rayo::Tensor<rayo::q4_0>, rayo::Tensor<rayo::q5_k>>;

    explicit Weight(Any w) : w_(std::move(w)) {}

    // x [rows, in] · wᵀ (+ bias [out] in every row) -> f32 [rows, out].
    [[nodiscard]] rayo::FTensor apply(rayo::FTensor const& x, std::optional<rayo::FTensor> const& bias = {}) const {
        return std::visit([&](auto const& w) { return bias ? rayo::linear(x, w, *bias) : rayo::linear(x, w); }, w_);
    }
    // x [rows, in] · wᵀ + bias [out] in every row -> f32 [rows, out].
    void apply_into(rayo::FTensor const& x, rayo::FTensor const& bias, rayo::FTensor const& out) const {
        std::visit([&](auto const& w) { rayo::linear_into(x, w, bias, out); }, w_);
    }
    // rms_norm(x, gain, eps) · wᵀ (+ bias), in one op.
    void apply_normed_into(rayo::FTensor const& x, rayo::FTensor const& gain, float eps, rayo::FTensor const& out,
                           std::optional<rayo::FTensor> const& bias = {}) const {
        std::visit(
            [&](auto const& w) {
                if (bias)
                    rayo::rms_norm_linear_into(x, gain, eps, w, *bias, out);
                else
                    rayo::rms_norm_linear_into(x, gain, eps, w, out);
            },
            w_);
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
                if constexpr (std::is_same_v<decltype(rayo::embedding(w, ids)), rayo::FTensor>)
                    rayo::embedding_into(w, ids, out);
                else
                    rayo::cast_into(rayo::embedding(w, ids), out);
            },
            w_);
    }
    // Rows [begin, end) of the matrix, a view.
    [[nodiscard]] Weight row_range(std::int64_t begin, std::int64_t end) const {
        return std::visit([&](auto const& w) { return Weight(w.slice(begin, end)); }, w_);
    }
    template <class T>
    [[nodiscard]] bool is() const noexcept {
        return std::holds_alternative<rayo::Tensor<T>>(w_);
    }
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
        Weight weight;                      // its rows: those of `parts` projections, one after another
        std::size_t parts;                  // how many projections it holds
        std::optional<rayo::FTensor> bias;  // one value a row (Qwen 2's q, k and v), joined likewise
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
    void apply_one_normed_into(rayo::FTensor const& x, rayo::FTensor const& gain, float eps,
                               rayo::FTensor const& out) const {
        std::int64_t at = 0;
        std::size_t part = 0;
        for (Group const& g : groups_) {
            std::int64_t rows = 0;
            for (std::size_t i = 0; i < g.parts; ++i) rows += part_rows_[part++];
            g.weight.apply_normed_into(x, gain, eps, out.slice(at, at + rows).reshape({1, rows}), g.bias);
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
                std::int64_t const end = at + part_rows_[part];
                std::optional<rayo::FTensor> const bias = g.bias ? std::optional(g.bias->slice(at, end)) : std::nullopt;
                out.push_back(g.weight.row_range(at, end).apply(x, bias));
                at = end;
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
    std::optional<rayo::FTensor> q_norm, k_norm;  // [head_dim] (Qwen 3)
};

// Every weight of the model, checked against the hyper-parameters.
struct Weights {
    Weight embeddings;
    std::vector<Layer> layers;
    rayo::FTensor output_norm;
    Weight output;  // the embeddings' own tensor when the file has no `output` (tied weights)
    std::optional<rayo::FTensor> rope_factors;
    std::size_t device_bytes = 0;  // of every tensor above, each counted once
};

// Every weight of a Llama-family file onto `device`, its shapes checked against `hp` and the tensors
// its architecture adds (Qwen 2's attn_{q,k,v}.bias, Qwen 3's attn_{q,k}_norm): ModelError for a
// missing tensor or a shape that disagrees, Unsupported for a type no weight may have.
[[nodiscard]] Weights load_weights(gguf::File const& file, Hyperparameters const& hp, Device device,
                                   LoadProgress progress);

}  // namespace rayo::llm
