// Tiny Llama-family GGUF models, valid and broken, shared by the rayo-llama tests and the llama
// fuzzer's seed corpus: llama.cpp's keys and tensor names, 10 to 30 KB each (width 16, vocabulary
// 32), weights in every type rayo-llama takes, with and without a vocabulary, tied or not.
#pragma once

#include <rayo/gguf.hpp>
#include <rayo/rayo.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace rayo::test::llama_samples {

namespace gguf = rayo::gguf;

enum class Vocabulary { none, sentencepiece, byte_level };

// The model a file holds. ffn_down takes rows of ffn values, so a K-quant ffn_down needs ffn = 256.
struct Spec {
    std::size_t layers = 2, width = 16, ffn = 32, heads = 4, kv_heads = 2, vocab = 32, context = 16;
    DType weights = DType::f16;  // token embeddings, attention and feed-forward matrices
    DType ffn_down = DType::f16;
    bool tied = false;        // no output.weight: the logits use the token embeddings
    bool rope_freqs = false;  // Llama 3's rope_freqs.weight
    Vocabulary vocabulary = Vocabulary::sentencepiece;
    std::uint32_t seed = 1;
};

// A file's contents before writing, so that variants can drop or change a key or a tensor.
struct Contents {
    gguf::Metadata metadata;
    std::vector<gguf::TensorToWrite> tensors;

    void drop_tensor(std::string const& name) {
        std::erase_if(tensors, [&](gguf::TensorToWrite const& t) { return t.name() == name; });
    }
    void replace_tensor(gguf::TensorToWrite t) {
        auto const it =
            std::find_if(tensors.begin(), tensors.end(), [&](auto const& u) { return u.name() == t.name(); });
        if (it != tensors.end()) *it = std::move(t);
    }
    [[nodiscard]] std::vector<std::byte> bytes() const { return gguf::write_to_memory(metadata, tensors); }
};

inline FTensor random_f32(Shape const& shape, float scale, float offset, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> v(shape.numel());
    for (float& x : v) x = offset + dist(rng);
    return FTensor::from(v, shape);
}

// A weight matrix [rows, cols] of small random values stored as `type`.
inline gguf::TensorToWrite matrix(std::string name, std::size_t rows, std::size_t cols, DType type,
                                  std::uint32_t seed) {
    FTensor const w =
        random_f32(Shape{rows, cols}, 0.5f / static_cast<float>(std::max<std::size_t>(cols, 1)) * 8.0f, 0.0f, seed);
    switch (type) {
        case DType::f16: return {std::move(name), cast<half>(w)};
        case DType::bf16: return {std::move(name), cast<bfloat16>(w)};
        case DType::q4_k: return {std::move(name), quantize<q4_k>(w)};
        case DType::q6_k: return {std::move(name), quantize<q6_k>(w)};
        default: return {std::move(name), w};
    }
}

inline gguf::TensorToWrite norm(std::string name, std::size_t n, std::uint32_t seed) {
    return {std::move(name), random_f32(Shape{n}, 0.2f, 1.0f, seed)};
}

// The text of token i: SentencePiece pieces (▁ for a space, <0xNN> bytes) or byte-level BPE ones
// (Ġ for a space, Ċ for a newline, UTF-8 bytes each spelled as one character).
inline std::string token_text(Vocabulary v, std::size_t i) {
    constexpr std::array<char const*, 10> sentencepiece{"<unk>",
                                                        "<s>",
                                                        "</s>",
                                                        "<0x0A>",
                                                        "<0xC3>",
                                                        "<0xA9>",
                                                        "\xe2\x96\x81"
                                                        "the",
                                                        "\xe2\x96\x81"
                                                        "caf",
                                                        "\xe2\x96\x81",
                                                        "."};
    constexpr std::array<char const*, 8> byte_level{"<|begin_of_text|>",
                                                    "\xc4\xa0"
                                                    "the",
                                                    "\xc4\x8a",
                                                    "caf\xc3\x83\xc2\xa9",
                                                    "\xc3\xa2\xc4\xa2\xc4\xb6",
                                                    "\xc4\xa0",
                                                    "!",
                                                    "\xc4\x89"};
    if (v == Vocabulary::sentencepiece && i < sentencepiece.size()) return sentencepiece[i];
    if (v == Vocabulary::byte_level && i < byte_level.size()) return byte_level[i];
    return (v == Vocabulary::byte_level ? "\xc4\xa0w" : "\xe2\x96\x81w") + std::to_string(i);
}

inline gguf::Metadata metadata(Spec const& s) {
    gguf::Metadata md;
    md.set("general.architecture", "llama");
    md.set("general.name", "rayo llama sample");
    md.set("llama.block_count", static_cast<std::uint32_t>(s.layers));
    md.set("llama.context_length", static_cast<std::uint32_t>(s.context));
    md.set("llama.embedding_length", static_cast<std::uint32_t>(s.width));
    md.set("llama.feed_forward_length", static_cast<std::uint32_t>(s.ffn));
    md.set("llama.attention.head_count", static_cast<std::uint32_t>(s.heads));
    md.set("llama.attention.head_count_kv", static_cast<std::uint32_t>(s.kv_heads));
    md.set("llama.rope.dimension_count", static_cast<std::uint32_t>(s.width / s.heads));
    md.set("llama.rope.freq_base", 10000.0f);
    md.set("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (s.vocabulary != Vocabulary::none) {
        md.set("tokenizer.ggml.model", s.vocabulary == Vocabulary::byte_level ? "gpt2" : "llama");
        std::vector<std::string> tokens;
        for (std::size_t i = 0; i < s.vocab; ++i) tokens.push_back(token_text(s.vocabulary, i));
        md.set("tokenizer.ggml.tokens", std::move(tokens));
        // SentencePiece: <unk> unknown, <s> </s> control, <0x..> bytes; byte-level: the first control.
        std::vector<std::int32_t> types(s.vocab, 1);
        if (s.vocabulary == Vocabulary::sentencepiece) {
            for (std::size_t i = 0; i < std::min<std::size_t>(6, s.vocab); ++i) types[i] = i == 0 ? 2 : i < 3 ? 3 : 6;
        } else if (s.vocab > 0) {
            types[0] = 3;
        }
        md.set("tokenizer.ggml.token_type", std::move(types));
        if (s.vocabulary == Vocabulary::byte_level) md.set("tokenizer.ggml.merges", std::vector<std::string>{});
        md.set("tokenizer.ggml.bos_token_id", std::uint32_t{1});
    }
    return md;
}

inline std::vector<gguf::TensorToWrite> tensors(Spec const& s) {
    std::size_t const d = s.width, hd = s.width / s.heads;
    std::uint32_t seed = s.seed * 1000;
    std::vector<gguf::TensorToWrite> t;
    t.push_back(matrix("token_embd.weight", s.vocab, d, s.weights, ++seed));
    for (std::size_t i = 0; i < s.layers; ++i) {
        std::string const p = "blk." + std::to_string(i) + ".";
        t.push_back(norm(p + "attn_norm.weight", d, ++seed));
        t.push_back(matrix(p + "attn_q.weight", s.heads * hd, d, s.weights, ++seed));
        t.push_back(matrix(p + "attn_k.weight", s.kv_heads * hd, d, s.weights, ++seed));
        t.push_back(matrix(p + "attn_v.weight", s.kv_heads * hd, d, s.weights, ++seed));
        t.push_back(matrix(p + "attn_output.weight", d, s.heads * hd, s.weights, ++seed));
        t.push_back(norm(p + "ffn_norm.weight", d, ++seed));
        t.push_back(matrix(p + "ffn_gate.weight", s.ffn, d, s.weights, ++seed));
        t.push_back(matrix(p + "ffn_up.weight", s.ffn, d, s.weights, ++seed));
        t.push_back(matrix(p + "ffn_down.weight", d, s.ffn, s.ffn_down, ++seed));
    }
    t.push_back(norm("output_norm.weight", d, ++seed));
    if (!s.tied) t.push_back(matrix("output.weight", s.vocab, d, s.weights, ++seed));
    if (s.rope_freqs) t.push_back(norm("rope_freqs.weight", hd / 2, ++seed));
    return t;
}

inline Contents contents(Spec const& s) { return {metadata(s), tensors(s)}; }

// One seed file: its name, its bytes, and the words rayo-llama's message must hold (none for a
// model that runs).
struct Sample {
    std::string name;
    std::vector<std::byte> bytes;
    std::vector<std::string> error_words;
};

inline std::vector<Sample> valid() {
    std::vector<Sample> out;
    auto add = [&](std::string name, Spec const& s) { out.push_back({std::move(name), contents(s).bytes(), {}}); };
    add("f32_one_layer_mqa.gguf",
        {.layers = 1, .kv_heads = 1, .weights = DType::f32, .ffn_down = DType::f32, .seed = 1});
    add("f16_two_layers.gguf", {.seed = 2});
    add("bf16_tied_no_vocabulary.gguf",
        {.weights = DType::bf16, .ffn_down = DType::bf16, .tied = true, .vocabulary = Vocabulary::none, .seed = 3});
    add("q4_k_ffn_down_byte_level.gguf",
        {.layers = 1, .ffn = 256, .ffn_down = DType::q4_k, .vocabulary = Vocabulary::byte_level, .seed = 4});
    add("q6_k_ffn_down_tied_rope_freqs.gguf", {.layers = 1,
                                               .ffn = 256,
                                               .ffn_down = DType::q6_k,
                                               .tied = true,
                                               .rope_freqs = true,
                                               .vocabulary = Vocabulary::none,
                                               .seed = 5});
    add("f16_tied_byte_level_rope_freqs.gguf",
        {.tied = true, .rope_freqs = true, .vocabulary = Vocabulary::byte_level, .seed = 6});
    return out;
}

// Variants of the f16 model that rayo-llama must refuse with a message naming the problem.
inline std::vector<Sample> invalid() {
    std::vector<Sample> out;
    Spec const base{.seed = 7};
    auto add = [&](std::string name, Contents const& c, std::vector<std::string> words) {
        out.push_back({std::move(name), c.bytes(), std::move(words)});
    };
    auto with_key = [&](std::string const& key, gguf::Value v) {
        Contents c = contents(base);
        c.metadata.set(key, std::move(v));
        return c;
    };
    using gguf::Value;
    add("bad_architecture.gguf", with_key("general.architecture", Value(std::string("gpt2"))),
        {"architecture", "gpt2"});
    Contents missing_key = contents(base);
    missing_key.metadata.erase("llama.block_count");
    add("bad_missing_key.gguf", missing_key, {"llama.block_count"});
    Contents missing_tensor = contents(base);
    missing_tensor.drop_tensor("blk.1.ffn_down.weight");
    add("bad_missing_tensor.gguf", missing_tensor, {"blk.1.ffn_down.weight"});
    Contents shape = contents(base);
    shape.replace_tensor(matrix("blk.0.attn_q.weight", 8, 16, DType::f16, 70));
    add("bad_shape.gguf", shape, {"blk.0.attn_q.weight", "[8, 16]", "[16, 16]"});
    static std::vector<std::byte> const q5_0(16 * 22);  // 16 rows of one Q5_0 block (32 values in 22 bytes)
    Contents type = contents(base);
    type.replace_tensor(gguf::TensorToWrite::raw("blk.0.ffn_down.weight", 6, Shape{16, 32}, q5_0));
    add("bad_type.gguf", type, {"blk.0.ffn_down.weight", "Q5_0"});
    add("bad_heads.gguf", with_key("llama.attention.head_count_kv", Value(std::uint32_t{3})), {"head_count_kv", "3"});
    // Hyper-parameters that would size something absurd or that the ops refuse.
    add("bad_block_count_huge.gguf", with_key("llama.block_count", Value(std::uint32_t{131072})),
        {"llama.block_count = 131072", "tensors"});
    add("bad_context_past_int32.gguf", with_key("llama.context_length", Value(std::uint64_t{1} << 31)),
        {"2147483648", "positions"});
    add("bad_rope_dimension_zero.gguf", with_key("llama.rope.dimension_count", Value(std::uint32_t{0})),
        {"llama.rope.dimension_count = 0"});
    add("bad_freq_base_nan.gguf", with_key("llama.rope.freq_base", Value(std::numeric_limits<float>::quiet_NaN())),
        {"llama.rope.freq_base", "finite"});
    add("bad_freq_base_past_float.gguf", with_key("llama.rope.freq_base", Value(1e300)),
        {"llama.rope.freq_base", "1e+300", "range of a float"});
    add("bad_rms_epsilon_negative.gguf", with_key("llama.attention.layer_norm_rms_epsilon", Value(-452141.375f)),
        {"llama.attention.layer_norm_rms_epsilon = -452141.38", ">= 0"});
    add("bad_rms_epsilon_string.gguf", with_key("llama.attention.layer_norm_rms_epsilon", Value(std::string("1e-5"))),
        {"llama.attention.layer_norm_rms_epsilon", "should be a float"});
    Contents empty_vocabulary = contents(base);
    empty_vocabulary.replace_tensor({"token_embd.weight", FTensor::from(std::vector<float>{}, Shape{0, base.width})});
    add("bad_empty_vocabulary.gguf", empty_vocabulary, {"token_embd.weight", "[0, 16]"});
    return out;
}

// Every seed of the llama fuzzer.
inline std::vector<Sample> corpus() {
    std::vector<Sample> all = valid();
    for (Sample& s : invalid()) all.push_back(std::move(s));
    return all;
}

}  // namespace rayo::test::llama_samples
