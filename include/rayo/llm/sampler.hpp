// Choosing the next token from a model's logits (rayo::llm).
//
//   rayo::llm::Sampler sampler({.temperature = 0.7f, .top_p = 0.9f, .seed = 42});
//   std::int32_t next = sampler.sample(logits.to_vector());   // also remembers `next` for the penalty
//
// The steps, in llama.cpp's order: the repetition penalty over the last `penalty_window` tokens
// (a positive logit divided by `repetition_penalty`, a negative one multiplied), top-k, then
// top-p and min-p on the probabilities at temperature 1, then the temperature, and a draw from
// what is left. Temperature 0 is greedy: the largest logit (the lowest id among equals) after the
// penalty, with no draw.
//
// The draws come from rayo's own generator (xoshiro256** seeded through splitmix64) and the
// probabilities are summed in double in one fixed order (largest logit first, the lower id among
// equals), so a seed gives the same tokens on every platform and for logits from every backend:
// equal logits, equal text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "rayo/export.hpp"

namespace rayo::llm {

struct SamplingParams {
    float temperature = 0.8f;         // 0: greedy
    std::size_t top_k = 40;           // 0: all tokens
    float top_p = 0.95f;              // 1: off; the fewest most probable tokens whose sum reaches it
    float min_p = 0.05f;              // 0: off; tokens below min_p × the best token's probability go
    float repetition_penalty = 1.0f;  // 1: off
    std::size_t penalty_window = 64;  // the last tokens the penalty looks at
    std::uint64_t seed = 0;
};

class RAYO_API Sampler {
public:
    // rayo::Error naming the field for a value outside its range: a negative or non-finite
    // temperature, top_p outside (0, 1], min_p outside [0, 1], a penalty not > 0.
    explicit Sampler(SamplingParams params = {});

    // The next token of `logits` (one per vocabulary entry; -inf rules a token out). The token
    // joins the penalty window. rayo::Error for empty logits, a NaN or +inf logit (naming its id),
    // or when every logit is -inf.
    [[nodiscard]] std::int32_t sample(std::span<float const> logits);

    // Tokens that count for the repetition penalty (the prompt's, or ones chosen elsewhere).
    void accept(std::int32_t token);
    // Forgets the penalty window and seeds the generator again with `seed`.
    void reset(std::uint64_t seed);

    [[nodiscard]] SamplingParams const& params() const noexcept { return params_; }

private:
    // A uniform double in [0, 1) from the generator's next 53 bits.
    [[nodiscard]] double uniform();

    SamplingParams params_;
    std::uint64_t state_[4] = {};
    std::deque<std::int32_t> recent_;
    // Reused between calls, so that sampling allocates nothing once warm.
    std::vector<std::pair<float, std::int32_t>> candidates_;
    std::vector<double> weights_;
    std::vector<std::int32_t> seen_;
};

}  // namespace rayo::llm
