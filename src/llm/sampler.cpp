// rayo::llm::Sampler (rayo/llm/sampler.hpp).
#include "rayo/llm/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "rayo/error.hpp"

namespace rayo::llm {

namespace {

[[noreturn]] void refuse(std::string const& what) { throw Error("rayo::llm::Sampler: " + what); }

std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Larger logit first; the lower id among equals.
bool before(std::pair<float, std::int32_t> const& a, std::pair<float, std::int32_t> const& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

Sampler::Sampler(SamplingParams params) : params_(params) {
    if (!std::isfinite(params.temperature) || params.temperature < 0)
        refuse("temperature " + std::to_string(params.temperature) + " should be finite and ≥ 0");
    if (!(params.top_p > 0 && params.top_p <= 1))
        refuse("top_p " + std::to_string(params.top_p) + " should be in (0, 1]");
    if (!(params.min_p >= 0 && params.min_p <= 1))
        refuse("min_p " + std::to_string(params.min_p) + " should be in [0, 1]");
    if (!(params.repetition_penalty > 0) || !std::isfinite(params.repetition_penalty))
        refuse("repetition_penalty " + std::to_string(params.repetition_penalty) + " should be finite and > 0");
    reset(params.seed);
}

void Sampler::reset(std::uint64_t seed) {
    params_.seed = seed;
    for (std::uint64_t& s : state_) s = splitmix64(seed);
    recent_.clear();
}

void Sampler::accept(std::int32_t token) {
    if (params_.penalty_window == 0) return;
    recent_.push_back(token);
    while (recent_.size() > params_.penalty_window) recent_.pop_front();
}

double Sampler::uniform() {
    // xoshiro256**
    std::uint64_t const result = rotl(state_[1] * 5, 7) * 9;
    std::uint64_t const t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return static_cast<double>(result >> 11) * 0x1.0p-53;
}

std::int32_t Sampler::sample(std::span<float const> logits) {
    if (logits.empty()) refuse("the logits are empty");
    if (logits.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        refuse("more logits than token ids");
    candidates_.resize(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i) {
        float const l = logits[i];
        if (std::isnan(l) || l == std::numeric_limits<float>::infinity())
            refuse("logit of token " + std::to_string(i) + " is " + (std::isnan(l) ? "NaN" : "+inf"));
        candidates_[i] = {l, static_cast<std::int32_t>(i)};
    }
    // The penalty, once for each token in the window.
    if (params_.repetition_penalty != 1.0f) {
        seen_.assign(recent_.begin(), recent_.end());
        std::sort(seen_.begin(), seen_.end());
        seen_.erase(std::unique(seen_.begin(), seen_.end()), seen_.end());
        for (std::int32_t id : seen_) {
            if (id < 0 || static_cast<std::size_t>(id) >= candidates_.size()) continue;
            float& l = candidates_[static_cast<std::size_t>(id)].first;
            l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
        }
    }
    std::erase_if(candidates_, [](auto const& c) { return c.first == -std::numeric_limits<float>::infinity(); });
    if (candidates_.empty()) refuse("every logit is -inf");

    std::int32_t chosen = 0;
    if (params_.temperature == 0.0f) {
        chosen = std::min_element(candidates_.begin(), candidates_.end(), before)->second;
    } else {
        std::size_t keep = candidates_.size();
        if (params_.top_k > 0 && params_.top_k < keep) keep = params_.top_k;
        std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                          candidates_.end(), before);
        candidates_.resize(keep);

        // Probabilities at temperature 1 for top-p and min-p.
        double const best = candidates_.front().first;
        std::vector<double>& p = weights_;
        p.resize(keep);
        double sum = 0;
        for (std::size_t i = 0; i < keep; ++i) sum += p[i] = std::exp(double(candidates_[i].first) - best);
        if (params_.top_p < 1.0f) {
            double cumulative = 0;
            std::size_t n = 0;
            while (n < keep && cumulative < params_.top_p * sum) cumulative += p[n++];
            keep = std::max<std::size_t>(n, 1);
        }
        if (params_.min_p > 0.0f) {
            std::size_t n = 1;
            while (n < keep && p[n] >= params_.min_p * p[0]) ++n;
            keep = n;
        }
        // The draw at the temperature (over p's storage: top-p and min-p are done with it).
        std::vector<double>& w = weights_;
        double total = 0;
        for (std::size_t i = 0; i < keep; ++i)
            total += w[i] = std::exp((double(candidates_[i].first) - best) / params_.temperature);
        double const target = uniform() * total;
        double cumulative = 0;
        chosen = candidates_[keep - 1].second;
        for (std::size_t i = 0; i < keep; ++i) {
            cumulative += w[i];
            if (target < cumulative) {
                chosen = candidates_[i].second;
                break;
            }
        }
    }
    accept(chosen);
    return chosen;
}

}  // namespace rayo::llm
