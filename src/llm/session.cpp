// rayo::llm::Session (rayo/llm/session.hpp). A token sampled last is fed lazily: at the start of
// the next feed or generate, so that a generation that stops runs no forward pass it does not need.
#include "rayo/llm/session.hpp"

#include <algorithm>
#include <chrono>

#include "rayo/ops.hpp"

namespace rayo::llm {

namespace {

// The bytes at the end of `text` that start a UTF-8 character they do not finish.
std::size_t unfinished_character(std::string_view text) {
    for (std::size_t back = 1; back <= std::min<std::size_t>(4, text.size()); ++back) {
        auto const byte = static_cast<unsigned char>(text[text.size() - back]);
        if ((byte & 0xC0) == 0x80) continue;  // a continuation byte
        std::size_t const length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
        return length > back ? back : 0;
    }
    return 0;
}

// The length of the longest end of text[from..] that begins one of `stops` without being all of it.
std::size_t held_for_stops(std::string_view text, std::size_t from, std::vector<std::string> const& stops) {
    std::size_t held = 0;
    for (std::string const& stop : stops)
        for (std::size_t k = std::min(stop.size() - 1, text.size() - from); k > held; --k)
            if (text.substr(text.size() - k) == std::string_view(stop).substr(0, k)) {
                held = k;
                break;
            }
    return held;
}

}  // namespace

std::string_view to_string(StopReason reason) noexcept {
    switch (reason) {
        case StopReason::max_tokens: return "max_tokens";
        case StopReason::end_of_generation: return "end_of_generation";
        case StopReason::stop_string: return "stop_string";
        case StopReason::context_full: return "context_full";
        case StopReason::callback: return "callback";
    }
    return "?";
}

Session::Session(Model& model, std::optional<Tokenizer> tokenizer) : model_(model), tokenizer_(std::move(tokenizer)) {}

std::size_t Session::context() const noexcept { return model_.hyperparameters().context; }

void Session::clear() noexcept {
    position_ = 0;
    logits_.reset();
    history_.clear();
    pending_.reset();
}

void Session::run(std::span<std::int32_t const> tokens) {
    logits_ = model_.forward(tokens, position_);
    position_ += tokens.size();
    history_.insert(history_.end(), tokens.begin(), tokens.end());
}

void Session::feed_pending() {
    if (!pending_) return;
    std::int32_t const token = *pending_;
    pending_.reset();
    run(std::span(&token, 1));
}

void Session::feed(std::span<std::int32_t const> tokens) {
    if (tokens.empty()) throw ModelError("Session::feed: no tokens");
    std::size_t const needed = position_ + tokens.size() + (pending_ ? 1 : 0);
    if (needed > context())
        throw ModelError("Session::feed: " + std::to_string(tokens.size()) + " tokens after the " +
                         std::to_string(position_ + (pending_ ? 1 : 0)) + " held need " + std::to_string(needed) +
                         " positions; the context holds " + std::to_string(context()));
    std::size_t const vocab = model_.hyperparameters().vocab;
    for (std::size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= vocab)
            throw ModelError("Session::feed: token " + std::to_string(tokens[i]) + " (at " + std::to_string(i) +
                             ") is outside the vocabulary of " + std::to_string(vocab));
    feed_pending();
    run(tokens);
}

std::int32_t Session::next_token(Sampler& sampler, bool greedy) {
    if (greedy) {  // on the device: only the id comes back
        auto const id = static_cast<std::int32_t>(rayo::argmax(*logits_).item());
        sampler.accept(id);
        return id;
    }
    std::vector<float> const logits = logits_->to_vector();
    return sampler.sample(logits);
}

Generation Session::generate(GenerationOptions const& options, std::function<bool(std::string_view)> const& on_text) {
    if (!logits_) throw ModelError("Session::generate: nothing has been fed");
    if (!tokenizer_ && !options.stop.empty())
        throw Error("Session::generate: stop strings need a tokenizer; this session has none");
    for (std::string const& stop : options.stop)
        if (stop.empty()) throw Error("Session::generate: a stop string is empty");
    Sampler sampler(options.sampling);
    Generation g;
    if (pending_ && position_ >= context()) {
        g.reason = StopReason::context_full;
        return g;
    }
    feed_pending();
    std::size_t const window = options.sampling.penalty_window;
    for (std::size_t i = history_.size() > window ? history_.size() - window : 0; i < history_.size(); ++i)
        sampler.accept(history_[i]);
    bool const greedy = options.sampling.temperature == 0.0f && options.sampling.repetition_penalty == 1.0f;

    std::size_t emitted = 0;  // bytes of g.text handed to on_text
    auto const emit = [&](std::size_t end) {
        if (end <= emitted) return true;
        std::string_view const part = std::string_view(g.text).substr(emitted, end - emitted);
        emitted = end;
        return !on_text || on_text(part);
    };
    auto const t0 = std::chrono::steady_clock::now();
    for (;;) {
        if (g.tokens.size() >= options.max_tokens) break;
        if (pending_) {
            if (position_ >= context()) {
                g.reason = StopReason::context_full;
                break;
            }
            feed_pending();
            ++g.steps;
        }
        std::int32_t const id = next_token(sampler, greedy);
        g.tokens.push_back(id);
        if (tokenizer_ && !options.ignore_end_of_generation && tokenizer_->is_end_of_generation(id)) {
            g.reason = StopReason::end_of_generation;
            break;
        }
        pending_ = id;
        if (!tokenizer_) continue;
        g.text += tokenizer_->token_text(id);
        std::size_t stop_at = std::string::npos;
        for (std::string const& stop : options.stop) stop_at = std::min(stop_at, g.text.find(stop, emitted));
        if (stop_at != std::string::npos) {
            g.text.resize(stop_at);
            emit(stop_at);
            g.reason = StopReason::stop_string;
            break;
        }
        std::size_t const held = std::max(unfinished_character(g.text), held_for_stops(g.text, emitted, options.stop));
        if (!emit(g.text.size() - held)) {
            g.reason = StopReason::callback;
            break;
        }
    }
    if (g.reason != StopReason::stop_string && g.reason != StopReason::callback) emit(g.text.size());
    g.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return g;
}

}  // namespace rayo::llm
