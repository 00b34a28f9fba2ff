// Text to token ids and back, for the vocabulary of a GGUF model file (rayo::llm).
//
//   auto file = rayo::gguf::File::open("model.gguf");
//   auto tokenizer = rayo::llm::Tokenizer::from_gguf(file);
//   std::vector<std::int32_t> ids = tokenizer.encode("Hello, world!");   // BOS first when the model wants it
//   std::string text = tokenizer.decode(ids);                             // "Hello, world!"
//   for (std::int32_t id : generated) std::cout << tokenizer.token_text(id);   // streaming, piece by piece
//
// Two kinds of vocabulary run, as llama.cpp runs them, and give its token ids for the same text:
//
// * SentencePiece (`tokenizer.ggml.model` "llama": Llama 1 and 2, Mistral, Phi-3, ...). Spaces are
//   written as ▁ and a space goes before the text (`tokenizer.ggml.add_space_prefix`, default
//   true); the pair of neighbouring pieces whose joined text is the token of the highest score
//   (`tokenizer.ggml.scores`) is merged, until none is a token; what is left that is not a token
//   is spelled in byte tokens <0xNN> (or the unknown token when those are missing).
// * Byte-level BPE (`tokenizer.ggml.model` "gpt2": Llama 3, Qwen 2, GPT-2, Falcon, StarCoder,
//   DeepSeek, ...; and "gemma4", whose pieces are UTF-8 with ▁ for spaces and byte tokens <0xNN>).
//   The pre-tokenizer (`tokenizer.ggml.pre`) cuts the text into words with the model's regular
//   expressions over Unicode categories; each byte of a word is spelled as one character (GPT-2's
//   byte-to-unicode table) and the merges of `tokenizer.ggml.merges` are applied, lowest rank first.
//   Pre-tokenizers known: see UnsupportedTokenizer's message, or PreTokenizer in src/llm.
//
// Special tokens (`tokenizer.ggml.token_type` 3, control, and 2, unknown) are found in the text
// only when encode() is asked to parse them: "<|eot_id|>" then becomes one id instead of the ids
// of its characters. User-defined tokens (type 4) are always found, as llama.cpp and Hugging Face
// do. Longer special tokens are looked for first.
//
// Text need not be valid UTF-8. SentencePiece keeps every byte (bytes that are not a token become
// byte tokens); byte-level BPE reads each byte that does not start a well-formed UTF-8 sequence as
// U+FFFD (which it then encodes), as llama.cpp does. Nothing is cut short and nothing throws.
//
// A Tokenizer is immutable and cheap to copy (copies share the vocabulary); encode and decode may
// run on many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/error.hpp"
#include "rayo/export.hpp"
#include "rayo/gguf.hpp"

namespace rayo::llm {

// A vocabulary this tokenizer cannot run: another `tokenizer.ggml.model` (BERT's WordPiece, T5's
// Unigram, RWKV, ...) or a `tokenizer.ggml.pre` it does not know. The message names what the file
// says and what is supported.
class RAYO_API UnsupportedTokenizer : public Error {
public:
    using Error::Error;
};

class RAYO_API Tokenizer {
public:
    // The tokenizer of a GGUF file's `tokenizer.ggml.*` metadata: model, pre, tokens, scores,
    // token_type, merges, bos/eos/unknown/padding_token_id (eot/eom_token_id too),
    // add_bos_token, add_eos_token and add_space_prefix. Without the keys, the defaults are
    // llama.cpp's: SentencePiece has BOS 1, EOS 2 and unknown 0, and adds BOS; byte-level BPE
    // adds BOS only for Llama 3's pre-tokenizer and has no special ids but the file's. An id past
    // the vocabulary counts as absent. UnsupportedTokenizer as above; rayo::FormatError naming the
    // key when a key has the wrong type or size, or the tokens or the merges are missing.
    [[nodiscard]] static Tokenizer from_gguf(gguf::File const& file);
    [[nodiscard]] static Tokenizer from_metadata(gguf::Metadata const& metadata);

    // The ids of `text`. add_special: BOS first and EOS last, each if the file asks for it
    // (adds_bos(), adds_eos()). parse_special: control tokens written in the text ("<s>",
    // "<|im_start|>") become their ids; otherwise they are encoded as text. SentencePiece puts its
    // space prefix before the text and again after each special token found in it.
    [[nodiscard]] std::vector<std::int32_t> encode(std::string_view text, bool add_special = true,
                                                   bool parse_special = false) const;

    // The text of `ids`: the bytes of their pieces joined (token_text). SentencePiece's leading
    // space is taken off the first piece that has text (so a BOS that renders nothing does not keep
    // it); vocabularies whose Hugging Face tokenizer cleans up spaces get the same clean-up
    // (" ," → ",", " 's" → "'s": GPT-2's, Llama 3's, Falcon's, not Qwen's). The result may end in
    // the middle of a UTF-8 character when the ids do. rayo::IndexError naming an id outside the
    // vocabulary.
    [[nodiscard]] std::string decode(std::span<std::int32_t const> ids, bool render_special = false) const;

    // The bytes token `id` stands for: ▁ as a space, a byte token as its byte, a byte-level piece as
    // the bytes it spells. Control and unknown tokens stand for nothing unless render_special,
    // when they are their text ("<|eot_id|>"); user-defined tokens are always their text.
    // rayo::IndexError naming an id outside the vocabulary.
    [[nodiscard]] std::string token_text(std::int32_t id, bool render_special = false) const;
    // The vocabulary's spelling of token `id`, as stored ("▁Hello", "ĠHello", "<0x0A>").
    [[nodiscard]] std::string_view token_piece(std::int32_t id) const;
    // The id of the token spelled exactly `piece` ("<|eot_id|>"), if there is one.
    [[nodiscard]] std::optional<std::int32_t> find(std::string_view piece) const;

    [[nodiscard]] std::size_t vocab_size() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> bos() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> eos() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> unknown() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> padding() const noexcept;
    // Whether encode(text, true) starts with BOS / ends with EOS.
    [[nodiscard]] bool adds_bos() const noexcept;
    [[nodiscard]] bool adds_eos() const noexcept;
    // Whether generating `id` ends the model's turn: EOS, the file's eot/eom ids, and tokens spelled
    // as the usual ends of turn or text ("<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|endoftext|>", ...).
    [[nodiscard]] bool is_end_of_generation(std::int32_t id) const noexcept;

    // `tokenizer.ggml.model`: "llama" (SentencePiece), "gpt2" (byte-level BPE) or "gemma4".
    [[nodiscard]] std::string_view model() const noexcept;
    // The pre-tokenizer's name (`tokenizer.ggml.pre`; "default" when a BPE file has none), empty
    // for SentencePiece.
    [[nodiscard]] std::string_view pre() const noexcept;

private:
    struct Impl;
    explicit Tokenizer(std::shared_ptr<Impl const> impl);
    std::shared_ptr<Impl const> impl_;
};

}  // namespace rayo::llm
