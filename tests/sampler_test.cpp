// rayo::llm::Sampler: greedy, each filter on logits whose outcome is known, the draw's frequencies
// against the softmax (float64), the seed's repeatability, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <rayo/llm.hpp>

namespace {

using rayo::llm::Sampler;
using rayo::llm::SamplingParams;

constexpr float inf = std::numeric_limits<float>::infinity();

SamplingParams plain(float temperature, std::uint64_t seed = 1) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

std::vector<float> random_logits(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

TEST(Sampler, TemperatureZeroIsTheLargestLogitLowestIdFirst) {
    Sampler s(plain(0.0f));
    EXPECT_EQ(s.sample(std::vector<float>{1, 5, 3, 5, -inf}), 1);
    EXPECT_EQ(s.sample(std::vector<float>{-inf, -inf, -1e30f}), 2);
    auto const logits = random_logits(1000, 7);
    auto const best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(s.sample(logits), best);
}

TEST(Sampler, DrawsFollowTheSoftmaxAtTheTemperature) {
    std::vector<float> const logits{0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -inf};
    for (float temperature : {1.0f, 0.5f, 2.0f}) {
        SCOPED_TRACE(temperature);
        std::vector<double> expected(logits.size());
        double sum = 0;
        for (std::size_t i = 0; i < logits.size(); ++i) sum += expected[i] = std::exp(double(logits[i]) / temperature);
        Sampler s(plain(temperature, 12345));
        std::vector<int> counts(logits.size(), 0);
        int const draws = 200000;
        for (int i = 0; i < draws; ++i) ++counts[static_cast<std::size_t>(s.sample(logits))];
        for (std::size_t i = 0; i < logits.size(); ++i) {
            double const p = expected[i] / sum;
            // 5 standard deviations of a binomial count.
            double const tolerance = 5 * std::sqrt(draws * p * (1 - p)) + 1;
            EXPECT_NEAR(counts[i], draws * p, tolerance) << "token " << i;
        }
        EXPECT_EQ(counts.back(), 0);
    }
}

TEST(Sampler, TopKTopPAndMinPKeepTheTokensTheyShould) {
    // Probabilities at temperature 1 of logits log(0.5), log(0.25), log(0.15), log(0.1).
    std::vector<float> const logits{std::log(0.25f), std::log(0.1f), std::log(0.5f), std::log(0.15f)};
    auto const reached = [&](SamplingParams p) {
        Sampler s(p);
        std::vector<bool> seen(logits.size(), false);
        for (int i = 0; i < 4000; ++i) seen[static_cast<std::size_t>(s.sample(logits))] = true;
        return seen;
    };
    SamplingParams p = plain(1.0f);
    EXPECT_EQ(reached(p), (std::vector<bool>{true, true, true, true}));
    p.top_k = 2;
    EXPECT_EQ(reached(p), (std::vector<bool>{true, false, true, false}));
    p = plain(1.0f);
    p.top_p = 0.7f;  // 0.5 + 0.25 reaches 0.7
    EXPECT_EQ(reached(p), (std::vector<bool>{true, false, true, false}));
    p.top_p = 0.8f;  // needs 0.15 too
    EXPECT_EQ(reached(p), (std::vector<bool>{true, false, true, true}));
    p = plain(1.0f);
    p.min_p = 0.4f;  // ≥ 0.2: 0.5 and 0.25
    EXPECT_EQ(reached(p), (std::vector<bool>{true, false, true, false}));
    p.min_p = 1.0f;
    EXPECT_EQ(reached(p), (std::vector<bool>{false, false, true, false}));
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
    SamplingParams p = plain(0.0f);
    p.repetition_penalty = 2.0f;
    Sampler s(p);
    // Token 0 (3.0) seen → 1.5 < token 1 (2.0).
    s.accept(0);
    EXPECT_EQ(s.sample(std::vector<float>{3.0f, 2.0f}), 1);
    // Token 1 was just chosen, so it is penalised too: 3.0/2 vs 2.0/2 → 0 again.
    EXPECT_EQ(s.sample(std::vector<float>{3.0f, 2.0f}), 0);
    Sampler negative(p);
    negative.accept(0);
    // -1.0 × 2 = -2.0 < -1.5.
    EXPECT_EQ(negative.sample(std::vector<float>{-1.0f, -1.5f}), 1);
    // The window forgets: with a window of 1, only the last token counts.
    p.penalty_window = 1;
    Sampler windowed(p);
    windowed.accept(0);
    windowed.accept(1);
    EXPECT_EQ(windowed.sample(std::vector<float>{3.0f, 2.0f}), 0);
}

TEST(Sampler, TheSameSeedGivesTheSameTokensAndResetRepeatsThem) {
    auto const logits = random_logits(50000, 3);
    SamplingParams p;  // the defaults: top-k 40, top-p 0.95, min-p 0.05, temperature 0.8
    p.temperature = 1.5f;
    p.seed = 99;
    Sampler a(p), b(p);
    std::vector<std::int32_t> first, second, third;
    for (int i = 0; i < 200; ++i) first.push_back(a.sample(logits));
    for (int i = 0; i < 200; ++i) second.push_back(b.sample(logits));
    EXPECT_EQ(first, second);
    a.reset(99);
    for (int i = 0; i < 200; ++i) third.push_back(a.sample(logits));
    EXPECT_EQ(first, third);
    std::sort(first.begin(), first.end());
    EXPECT_GT(std::unique(first.begin(), first.end()) - first.begin(), 3);  // it does draw
    p.seed = 100;
    Sampler c(p);
    std::vector<std::int32_t> other;
    for (int i = 0; i < 200; ++i) other.push_back(c.sample(logits));
    EXPECT_NE(other, second);
}

TEST(Sampler, BadInputIsRefusedNamingIt) {
    auto const message = [](auto&& f) -> std::string {
        try {
            f();
        } catch (rayo::Error const& e) {
            return e.what();
        }
        return "(nothing thrown)";
    };
    Sampler s(plain(1.0f));
    EXPECT_NE(message([&] { (void)s.sample(std::vector<float>{}); }).find("empty"), std::string::npos);
    std::vector<float> nan{0.0f, std::nanf(""), 1.0f};
    EXPECT_NE(message([&] { (void)s.sample(nan); }).find("token 1 is NaN"), std::string::npos);
    EXPECT_NE(message([&] { (void)s.sample(std::vector<float>{0.0f, inf}); }).find("+inf"), std::string::npos);
    EXPECT_NE(message([&] { (void)s.sample(std::vector<float>{-inf, -inf}); }).find("-inf"), std::string::npos);
    SamplingParams p = plain(-1.0f);
    EXPECT_NE(message([&] { Sampler bad(p); }).find("temperature"), std::string::npos);
    p = plain(1.0f);
    p.top_p = 0.0f;
    EXPECT_NE(message([&] { Sampler bad(p); }).find("top_p"), std::string::npos);
    p = plain(1.0f);
    p.min_p = 1.5f;
    EXPECT_NE(message([&] { Sampler bad(p); }).find("min_p"), std::string::npos);
    p = plain(1.0f);
    p.repetition_penalty = 0.0f;
    EXPECT_NE(message([&] { Sampler bad(p); }).find("repetition_penalty"), std::string::npos);
}

}  // namespace
