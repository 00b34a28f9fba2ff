// The pre-tokenizers of byte-level BPE vocabularies: how text is cut into words before the
// merges run inside each word, by the regular expressions of the model's Hugging Face tokenizer,
// under the names llama.cpp's converter writes to `tokenizer.ggml.pre` ("llama-bpe", "qwen2", ...).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/pattern.hpp"

namespace rayo::llm {

class PreTokenizer {
public:
    // The pre-tokenizer called `name`, or nothing when rayo does not know it.
    [[nodiscard]] static std::optional<PreTokenizer> named(std::string_view name);
    // The names named() knows, comma-separated, for messages.
    [[nodiscard]] static std::string known_names();
    // Newline runs and the runs between them (Gemma 4's vocabulary, which has no word patterns).
    [[nodiscard]] static PreTokenizer newline_runs();

    // The words of `text` as (start, length) in code points, in order, covering all of it: each
    // pattern in turn cuts every piece the previous ones left into its matches and the runs
    // between them (Hugging Face's Split with the behaviour "isolated").
    [[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> split(std::u32string_view text) const;

    // Whether a word that is itself a token is taken whole, before any merge (Llama 3's tokenizer).
    [[nodiscard]] bool ignores_merges() const noexcept { return ignore_merges_; }
    // Whether the model's tokenizer adds a BOS token when the file does not say (tokenizer.ggml.add_bos_token).
    [[nodiscard]] bool adds_bos() const noexcept { return add_bos_; }
    // Whether decoded text gets Hugging Face's clean-up of spaces (" ," → ",", " 's" → "'s", ...).
    [[nodiscard]] bool cleans_up_spaces() const noexcept { return clean_up_spaces_; }

private:
    PreTokenizer() = default;
    std::vector<Pattern> patterns_;
    bool ignore_merges_ = false, add_bos_ = false, clean_up_spaces_ = true;
};

}  // namespace rayo::llm
