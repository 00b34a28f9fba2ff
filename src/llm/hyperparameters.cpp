// read_hyperparameters: the `ARCH.*` keys of a GGUF file, checked (rayo/llm/model.hpp).
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "rayo/llm/model.hpp"

namespace rayo::llm {

namespace {

// A metadata number of any integer type (writers differ: u32, i32, u64).
std::optional<std::uint64_t> integer(gguf::Metadata const& md, std::string_view key) {
    gguf::Value const* v = md.find(key);
    if (!v) return std::nullopt;
    return std::visit(
        [&](auto const& x) -> std::uint64_t {
            using X = std::decay_t<decltype(x)>;
            if constexpr (std::is_integral_v<X> && !std::is_same_v<X, bool>) {
                if (x < 0) throw ModelError("metadata " + std::string(key) + " is negative: " + std::to_string(x));
                return static_cast<std::uint64_t>(x);
            } else {
                throw ModelError("metadata " + std::string(key) + " should be an integer, it is " +
                                 std::string(gguf::to_string(gguf::type_of(*v))));
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

std::size_t required(gguf::Metadata const& md, std::string_view key) {
    std::optional<std::uint64_t> const v = integer(md, key);
    if (!v) throw ModelError("the file has no " + std::string(key) + " (the model needs it)");
    if (*v == 0) throw ModelError("metadata " + std::string(key) + " is 0");
    return static_cast<std::size_t>(*v);
}

float real(gguf::Metadata const& md, std::string_view key, float fallback) {
    gguf::Value const* v = md.find(key);
    if (!v) return fallback;
    if (auto const* f = std::get_if<float>(v)) return *f;
    if (auto const* d = std::get_if<double>(v)) {
        if (std::isfinite(*d) && std::abs(*d) > std::numeric_limits<float>::max())
            throw ModelError("metadata " + std::string(key) + " = " + number(*d) + " is out of the range of a float");
        return static_cast<float>(*d);
    }
    throw ModelError("metadata " + std::string(key) + " should be a float, it is " +
                     std::string(gguf::to_string(gguf::type_of(*v))));
}

}  // namespace

Hyperparameters read_hyperparameters(gguf::File const& file) {
    gguf::Metadata const& md = file.metadata();
    gguf::Value const* arch = md.find("general.architecture");
    if (!arch || !std::holds_alternative<std::string>(*arch))
        throw ModelError("the file has no general.architecture string");
    std::string const& name = std::get<std::string>(*arch);
    Hyperparameters h;
    if (name == "llama")
        h.architecture = Architecture::llama;
    else if (name == "qwen2")
        h.architecture = Architecture::qwen2;
    else if (name == "qwen3")
        h.architecture = Architecture::qwen3;
    else
        throw ModelError("the file's architecture is '" + gguf::printable(name) +
                         "'; rayo::llm runs 'llama', 'qwen2' and 'qwen3'");
    std::string const a = name + ".";
    h.layers = required(md, a + "block_count");
    h.width = required(md, a + "embedding_length");
    h.ffn_width = required(md, a + "feed_forward_length");
    h.heads = required(md, a + "attention.head_count");
    h.kv_heads = integer(md, a + "attention.head_count_kv").value_or(h.heads);
    h.context = required(md, a + "context_length");
    if (h.kv_heads == 0 || h.heads % h.kv_heads != 0)
        throw ModelError(a + "attention.head_count_kv = " + std::to_string(h.kv_heads) + " does not divide " + a +
                         "attention.head_count = " + std::to_string(h.heads));
    if (auto const key_length = integer(md, a + "attention.key_length")) {
        h.head_dim = static_cast<std::size_t>(*key_length);
        auto const value_length = integer(md, a + "attention.value_length").value_or(*key_length);
        if (h.head_dim == 0 || value_length != *key_length)
            throw ModelError(a + "attention.key_length = " + std::to_string(*key_length) + " and " + a +
                             "attention.value_length = " + std::to_string(value_length) +
                             " must be equal and non-zero");
    } else {
        if (h.width % h.heads != 0)
            throw ModelError(a + "embedding_length = " + std::to_string(h.width) + " is not a multiple of " + a +
                             "attention.head_count = " + std::to_string(h.heads));
        h.head_dim = h.width / h.heads;
    }
    h.rope_dims = integer(md, a + "rope.dimension_count").value_or(h.head_dim);
    if (h.rope_dims == 0 || h.rope_dims > h.head_dim || h.rope_dims % 2 != 0)
        throw ModelError(a + "rope.dimension_count = " + std::to_string(h.rope_dims) +
                         " must be even, non-zero and at most the head size " + std::to_string(h.head_dim));
    h.rope_base = real(md, a + "rope.freq_base", 10000.0f);
    if (!std::isfinite(h.rope_base) || !(h.rope_base > 0.0f))
        throw ModelError(a + "rope.freq_base = " + number(h.rope_base) + " must be a finite number > 0");
    h.rms_eps = real(md, a + "attention.layer_norm_rms_epsilon", 1e-5f);
    if (!std::isfinite(h.rms_eps) || !(h.rms_eps >= 0.0f))
        throw ModelError(a + "attention.layer_norm_rms_epsilon = " + number(h.rms_eps) +
                         " must be a finite number >= 0");
    h.sliding_window = static_cast<std::size_t>(integer(md, a + "attention.sliding_window").value_or(0));
    // Each layer has 9 tensors; checked before anything is sized by the layer count.
    if (h.layers > file.tensors().size() / 9)
        throw ModelError(a + "block_count = " + std::to_string(h.layers) + " needs 9 tensors a layer; the file holds " +
                         std::to_string(file.tensors().size()) + " tensors");
    gguf::TensorInfo const* embd = file.find("token_embd.weight");
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

}  // namespace rayo::llm
