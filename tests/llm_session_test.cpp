// rayo::llm::Session and ChatTemplate: generation against a loop of Model::forward and argmax on
// the fuzzer's seed models (tests/support/llama_samples.hpp), each stop reason, streamed text,
// errors that leave the session as it was; the two chat formats written out in full.
#include <gtest/gtest.h>

#include <rayo/rayo.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <rayo/llm.hpp>
#include "support/llama_samples.hpp"

namespace {

namespace samples = rayo::test::llama_samples;
namespace gguf = rayo::gguf;
using rayo::llm::ChatTemplate;
using rayo::llm::GenerationOptions;
using rayo::llm::Model;
using rayo::llm::ModelError;
using rayo::llm::Session;
using rayo::llm::StopReason;
using rayo::llm::Tokenizer;
using Ids = std::vector<std::int32_t>;

// The seed model with a SentencePiece vocabulary of 32 tokens and a context of 16.
struct Fixture {
    std::vector<std::byte> bytes = samples::contents({.seed = 11}).bytes();
    gguf::File file = gguf::File::from_memory(bytes, "sample");
    Model model{file, rayo::Device::cpu()};
    Tokenizer tokenizer = Tokenizer::from_gguf(file);
};

GenerationOptions greedy(std::size_t max_tokens) {
    GenerationOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = 0.0f;
    o.ignore_end_of_generation = true;
    return o;
}

// What greedy decoding gives, step by step through Model::forward.
Ids argmax_loop(Model& model, Ids prompt, std::size_t n) {
    Ids out;
    rayo::FTensor logits = model.forward(prompt, 0);
    std::size_t pos = prompt.size();
    for (std::size_t i = 0; i < n; ++i) {
        auto const id = static_cast<std::int32_t>(rayo::argmax(logits).item());
        out.push_back(id);
        if (i + 1 < n) logits = model.forward(std::span(&id, 1), pos++);
    }
    return out;
}

TEST(LlmSession, GreedyGenerationIsTheArgmaxOfEachStep) {
    Fixture f;
    Ids const prompt{1, 6, 7};
    Ids const expected = argmax_loop(f.model, prompt, 8);
    Session session(f.model, f.tokenizer);
    session.feed(prompt);
    std::string streamed;
    auto const g = session.generate(greedy(8), [&](std::string_view t) {
        streamed += t;
        return true;
    });
    EXPECT_EQ(g.tokens, expected);
    EXPECT_EQ(g.reason, StopReason::max_tokens);
    EXPECT_EQ(g.steps, 7u);
    EXPECT_EQ(streamed, g.text);
    std::string joined;
    for (std::int32_t id : g.tokens) joined += f.tokenizer.token_text(id);
    EXPECT_EQ(g.text, joined);
    EXPECT_EQ(session.position(), prompt.size() + 8);

    // Going on: the last token joins the cache first; the same as one longer generation.
    Session whole(f.model, f.tokenizer);
    whole.feed(prompt);
    Ids const longer = whole.generate(greedy(12)).tokens;
    Ids const more = session.generate(greedy(4)).tokens;
    Ids joined_ids = g.tokens;
    joined_ids.insert(joined_ids.end(), more.begin(), more.end());
    EXPECT_EQ(joined_ids, longer);
}

TEST(LlmSession, StopsWhenTheContextIsFull) {
    Fixture f;
    Session session(f.model, f.tokenizer);
    session.feed(Ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    auto const g = session.generate(greedy(100));
    EXPECT_EQ(g.reason, StopReason::context_full);
    EXPECT_EQ(g.tokens.size(), 7u);  // positions 10..15 fed, the 7th sampled from position 15
    EXPECT_EQ(session.position(), 17u);
    EXPECT_EQ(session.generate(greedy(1)).reason, StopReason::context_full);
    EXPECT_THROW(session.feed(Ids{1}), ModelError);
}

TEST(LlmSession, StopStringsEndTheTextBeforeThem) {
    Fixture f;
    Session probe(f.model, f.tokenizer);
    probe.feed(Ids{1, 6, 7});
    std::string const text = probe.generate(greedy(8)).text;
    ASSERT_GE(text.size(), 4u);
    std::string const stop = text.substr(text.size() / 2, 2);
    std::size_t const at = text.find(stop);

    Session session(f.model, f.tokenizer);
    session.feed(Ids{1, 6, 7});
    GenerationOptions o = greedy(8);
    o.stop = {stop, "never in the text"};
    std::string streamed;
    auto const g = session.generate(o, [&](std::string_view t) {
        streamed += t;
        return true;
    });
    EXPECT_EQ(g.reason, StopReason::stop_string);
    EXPECT_EQ(g.text, text.substr(0, at));
    EXPECT_EQ(streamed, g.text);
}

TEST(LlmSession, TheCallbackCanStopIt) {
    Fixture f;
    Session session(f.model, f.tokenizer);
    session.feed(Ids{1, 6, 7});
    int calls = 0;
    auto const g = session.generate(greedy(8), [&](std::string_view) { return ++calls < 2; });
    EXPECT_EQ(g.reason, StopReason::callback);
    EXPECT_EQ(calls, 2);
    EXPECT_LT(g.tokens.size(), 8u);
}

TEST(LlmSession, TheSameSeedGivesTheSameTokens) {
    Fixture f;
    GenerationOptions o = greedy(10);
    o.sampling.temperature = 1.5f;
    o.sampling.top_k = 0;
    o.sampling.min_p = 0.0f;
    o.sampling.seed = 7;
    auto const run = [&] {
        Session session(f.model, f.tokenizer);
        session.feed(Ids{1, 6, 7});
        return session.generate(o).tokens;
    };
    Ids const a = run(), b = run();
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.size(), 10u);
}

TEST(LlmSession, BadRequestsLeaveTheSessionAsItWas) {
    Fixture f;
    Session session(f.model, f.tokenizer);
    EXPECT_THROW((void)session.generate(greedy(1)), ModelError);  // nothing fed
    session.feed(Ids{1, 2});
    EXPECT_THROW(session.feed(Ids{}), ModelError);
    EXPECT_THROW(session.feed(Ids{1, 32}), ModelError);
    EXPECT_THROW(session.feed(Ids(15, 3)), ModelError);
    EXPECT_EQ(session.position(), 2u);
    GenerationOptions o = greedy(2);
    o.stop = {""};
    EXPECT_THROW((void)session.generate(o), rayo::Error);
    Session ids_only(f.model);
    ids_only.feed(Ids{1, 2});
    o.stop = {"x"};
    EXPECT_THROW((void)ids_only.generate(o), rayo::Error);
    // The session still generates what a fresh one does.
    Session fresh(f.model, f.tokenizer);
    fresh.feed(Ids{1, 2});
    EXPECT_EQ(session.generate(greedy(3)).tokens, fresh.generate(greedy(3)).tokens);
}

TEST(LlmSession, EndOfGenerationStopsUnlessIgnored) {
    Fixture f;
    Session probe(f.model, f.tokenizer);
    probe.feed(Ids{1, 6, 7});
    Ids const tokens = probe.generate(greedy(12)).tokens;
    // Make the third generated token the end of generation, as the file's EOS.
    std::vector<std::byte> bytes;
    {
        auto c = samples::contents({.seed = 11});
        c.metadata.set("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(tokens[2]));
        bytes = c.bytes();
    }
    gguf::File const file = gguf::File::from_memory(bytes, "sample");
    Model model(file, rayo::Device::cpu());
    Session session(model, Tokenizer::from_gguf(file));
    session.feed(Ids{1, 6, 7});
    GenerationOptions o = greedy(12);
    o.ignore_end_of_generation = false;
    auto const g = session.generate(o);
    EXPECT_EQ(g.reason, StopReason::end_of_generation);
    std::size_t const first =
        static_cast<std::size_t>(std::find(tokens.begin(), tokens.end(), tokens[2]) - tokens.begin());
    EXPECT_EQ(g.tokens, Ids(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(first) + 1));
}

// ---- chat templates ----------------------------------------------------------------------------------

ChatTemplate chat_of(std::string jinja) {
    gguf::Metadata md;
    md.set("tokenizer.chat_template", std::move(jinja));
    return ChatTemplate::from_metadata(md);
}

TEST(LlmChatTemplate, Llama3TurnsAreWrittenInFull) {
    ChatTemplate const t = chat_of("{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>...");
    EXPECT_EQ(t.format(), ChatTemplate::Format::llama3);
    EXPECT_EQ(t.apply({{"system", "Be brief."}, {"user", "Hi!"}}),
              "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(t.apply({{"user", "a"}}, false), "<|start_header_id|>user<|end_header_id|>\n\na<|eot_id|>");
    EXPECT_EQ(t.end_of_assistant_turn(), "<|eot_id|>");
}

TEST(LlmChatTemplate, ChatMLTurnsAreWrittenInFull) {
    ChatTemplate const t = chat_of("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' ...");
    EXPECT_EQ(t.format(), ChatTemplate::Format::chatml);
    EXPECT_EQ(t.name(), "chatml");
    EXPECT_EQ(t.apply({{"user", "Hi!"}, {"assistant", "Hello."}, {"user", "Bye"}}),
              "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
              "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(t.end_of_assistant_turn(), "<|im_end|>\n");
}

TEST(LlmChatTemplate, OtherTemplatesAndRolesAreRefusedNamingThem) {
    try {
        (void)chat_of("{{ bos_token }}{% for message in messages %}[INST] {{ message['content'] }} [/INST]");
        ADD_FAILURE() << "accepted";
    } catch (rayo::llm::UnsupportedChatTemplate const& e) {
        EXPECT_NE(std::string(e.what()).find("[INST]"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)ChatTemplate::from_metadata(gguf::Metadata{}), rayo::llm::UnsupportedChatTemplate);
    ChatTemplate const t(ChatTemplate::Format::chatml);
    try {
        (void)t.apply({{"tool", "x"}});
        ADD_FAILURE() << "accepted";
    } catch (rayo::Error const& e) {
        EXPECT_NE(std::string(e.what()).find("'tool'"), std::string::npos) << e.what();
    }
}

}  // namespace
