// A conversation with a model: its KV cache's position, the last logits, and generation that
// samples, detokenizes and stops (rayo::llm).
//
//   rayo::llm::Session session(model, tokenizer);
//   session.feed(tokenizer.encode("The capital of France is"));
//   rayo::llm::GenerationOptions options;
//   options.max_tokens = 32;
//   options.sampling.temperature = 0;                        // greedy
//   auto result = session.generate(options, [](std::string_view text) {
//       std::cout << text << std::flush;                     // streamed as it is generated
//       return true;                                         // false stops the generation
//   });
//
// Text is handed to the callback only in whole UTF-8 characters, and never the part of it that
// may still become a stop string: what reaches it is what result.text holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/export.hpp"
#include "rayo/llm/model.hpp"
#include "rayo/llm/sampler.hpp"
#include "rayo/llm/tokenizer.hpp"

namespace rayo::llm {

enum class StopReason {
    max_tokens,         // options.max_tokens were generated
    end_of_generation,  // the model ended its turn (Tokenizer::is_end_of_generation)
    stop_string,        // the text reached one of options.stop
    context_full,       // the KV cache holds the whole context
    callback,           // the callback returned false
};
[[nodiscard]] RAYO_API std::string_view to_string(StopReason reason) noexcept;

struct GenerationOptions {
    std::size_t max_tokens = 256;
    SamplingParams sampling;
    std::vector<std::string> stop;  // generation ends when the text reaches one (left out of the text)
    bool ignore_end_of_generation = false;
};

struct Generation {
    std::vector<std::int32_t> tokens;  // as sampled, the end-of-generation token included
    std::string text;                  // their text, up to a stop string; empty without a tokenizer
    StopReason reason = StopReason::max_tokens;
    std::size_t steps = 0;      // decode steps run (forward passes of one token)
    double decode_seconds = 0;  // from the first sampled token to the last
};

class RAYO_API Session {
public:
    // A session over `model` (which must outlive it) from position 0. Without a tokenizer it runs
    // token ids only: no text, no end-of-generation token, no stop strings.
    explicit Session(Model& model, std::optional<Tokenizer> tokenizer = std::nullopt);

    // Runs `tokens` after what the session holds (a prompt, the next turn). ModelError, before any
    // work and with the session as it was, when they are empty, outside the vocabulary or pass
    // the context.
    void feed(std::span<std::int32_t const> tokens);

    // Samples tokens one by one from the last logits, each fed back, until a StopReason. The
    // tokens stay in the cache (a stop string's tokens too), so a conversation goes on with feed.
    // ModelError when nothing has been fed; rayo::Error for options the sampler refuses or stop
    // strings without a tokenizer.
    Generation generate(GenerationOptions const& options, std::function<bool(std::string_view)> const& on_text = {});

    // Forgets the conversation: the next feed starts at position 0.
    void clear() noexcept;

    // The tokens fed and generated so far (the last generated one joins the cache when the
    // conversation goes on).
    [[nodiscard]] std::size_t position() const noexcept { return position_ + (pending_ ? 1 : 0); }
    [[nodiscard]] std::size_t context() const noexcept;
    [[nodiscard]] std::optional<Tokenizer> const& tokenizer() const noexcept { return tokenizer_; }
    [[nodiscard]] Model& model() noexcept { return model_; }

private:
    void run(std::span<std::int32_t const> tokens);
    void feed_pending();
    std::int32_t next_token(Sampler& sampler, bool greedy);

    Model& model_;
    std::optional<Tokenizer> tokenizer_;
    std::size_t position_ = 0;
    std::optional<Tensor<float>> logits_;  // [vocab], of the last token fed
    std::vector<std::int32_t> history_;    // the tokens in the cache, for the repetition penalty
    std::optional<std::int32_t> pending_;  // sampled last, not yet in the cache
};

}  // namespace rayo::llm
