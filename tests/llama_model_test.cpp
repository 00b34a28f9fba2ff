// rayo-llama's model loader (examples/llama/llama_model.hpp) on the llama fuzzer's seed files
// (tests/support/llama_samples.hpp): the valid models run, the broken ones are refused with a
// message naming the problem; and the vocabulary's text of SentencePiece and byte-level BPE tokens.
#include <gtest/gtest.h>

#include <rayo/rayo.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llama_model.hpp"
#include "support/llama_samples.hpp"

namespace {

namespace samples = rayo::test::llama_samples;
namespace gguf = rayo::gguf;
using rayo_llama::Model;
using rayo_llama::ModelError;
using rayo_llama::Vocabulary;

gguf::File parse(std::vector<std::byte> const& bytes) { return gguf::File::from_memory(bytes, "sample"); }

void expect_words(std::string const& message, std::vector<std::string> const& words) {
    for (std::string const& w : words) EXPECT_NE(message.find(w), std::string::npos) << "'" << w << "' in: " << message;
}

TEST(LlamaModel, SeedModelsLoadAndRun) {
    for (auto const& sample : samples::valid()) {
        SCOPED_TRACE(sample.name);
        gguf::File const file = parse(sample.bytes);
        Model model(file, rayo::Device::cpu());
        auto const& hp = model.hyperparameters();
        EXPECT_EQ(hp.width, 16u);
        EXPECT_EQ(hp.context, 16u);
        auto const vocab = static_cast<std::int64_t>(hp.vocab);
        std::vector<std::int32_t> const prompt{1, 2, static_cast<std::int32_t>(vocab - 1)};
        rayo::FTensor const all = model.forward(prompt, 0, true);
        ASSERT_EQ(all.shape(), (rayo::Shape{3, vocab}));
        std::int32_t const next = 5;
        rayo::FTensor const step = model.forward(std::span(&next, 1), prompt.size());
        ASSERT_EQ(step.shape(), (rayo::Shape{vocab}));
        for (float v : all.to_vector()) ASSERT_TRUE(std::isfinite(v));
        for (float v : step.to_vector()) ASSERT_TRUE(std::isfinite(v));
    }
}

TEST(LlamaModel, BrokenSeedsAreRefusedNamingTheProblem) {
    for (auto const& sample : samples::invalid()) {
        SCOPED_TRACE(sample.name);
        try {
            gguf::File const file = parse(sample.bytes);
            Model const model(file, rayo::Device::cpu());
            ADD_FAILURE() << "the model loaded";
        } catch (ModelError const& e) {
            expect_words(e.what(), sample.error_words);
        } catch (rayo::Error const& e) {
            expect_words(e.what(), sample.error_words);
        }
    }
}

TEST(LlamaModel, RequestsOutsideTheModelRaiseModelError) {
    auto const sample = samples::contents({.layers = 1, .context = 4}).bytes();
    gguf::File const file = parse(sample);
    Model model(file, rayo::Device::cpu());
    std::vector<std::int32_t> const outside{1, 32}, negative{-3}, too_long{1, 2, 3, 4, 5};
    auto message = [&](std::vector<std::int32_t> const& tokens, std::size_t pos) -> std::string {
        try {
            (void)model.forward(tokens, pos);
        } catch (ModelError const& e) {
            return e.what();
        }
        return "no error";
    };
    expect_words(message(outside, 0), {"token 32", "vocabulary of 32"});
    expect_words(message(negative, 0), {"token -3", "vocabulary"});
    expect_words(message(too_long, 0), {"5 tokens", "context of 4"});
    expect_words(message({1}, 4), {"5 tokens", "context of 4"});
    expect_words(message({}, 0), {"no tokens"});
}

// A context larger than int32 positions is refused unless the caller caps it.
TEST(LlamaModel, ContextCapBoundsTheCache) {
    samples::Contents c = samples::contents({.layers = 1});
    c.metadata.set("llama.context_length", std::uint64_t{1} << 40);
    auto const bytes = c.bytes();
    gguf::File const file = parse(bytes);
    EXPECT_THROW((void)Model(file, rayo::Device::cpu()), ModelError);
    Model capped(file, rayo::Device::cpu(), {}, 8);
    EXPECT_EQ(capped.hyperparameters().context, 8u);
}

// ---- the vocabulary ------------------------------------------------------------------------------------

Vocabulary vocabulary(char const* model, std::vector<std::string> tokens, std::vector<std::byte>& storage) {
    gguf::Metadata md;
    md.set("tokenizer.ggml.model", model);
    md.set("tokenizer.ggml.tokens", std::move(tokens));
    storage = gguf::write_to_memory(md, {});
    return Vocabulary(parse(storage));
}

TEST(LlamaVocabulary, ByteLevelCharactersMapBackToBytes) {
    std::vector<std::byte> storage;
    Vocabulary const v = vocabulary("gpt2",
                                    {"\xc4\xa0hello",                 // Ġhello
                                     "\xc4\x8a", "\xc4\x89",          // Ċ ĉ: newline, tab
                                     "caf\xc3\x83\xc2\xa9",           // cafÃ©: café
                                     "\xc3\xa2\xc4\xa2\xc4\xb6",      // âĢĶ: an em dash
                                     "\xc4\x80", "\xc4\xa1", "\xc5\x83",  // Ā ġ Ń: bytes 0x00, 0x7f, 0xad
                                     "\xc2\xa1\xc2\xae\xc3\xbf", "!~"},   // ¡®ÿ and ASCII: themselves
                                    storage);
    EXPECT_EQ(v.text(0), " hello");
    EXPECT_EQ(v.text(1), "\n");
    EXPECT_EQ(v.text(2), "\t");
    EXPECT_EQ(v.text(3), "caf\xc3\xa9");
    EXPECT_EQ(v.text(4), "\xe2\x80\x94");
    EXPECT_EQ(v.text(5), std::string(1, '\0'));
    EXPECT_EQ(v.text(6), "\x7f");
    EXPECT_EQ(v.text(7), "\xad");
    EXPECT_EQ(v.text(8), "\xa1\xae\xff");
    EXPECT_EQ(v.text(9), "!~");
    EXPECT_EQ(v.text(10), "");
    EXPECT_EQ(v.text(-1), "");
}

// Pieces that are no byte-level spelling (a raw space, a character past the 256 byte characters, a
// broken UTF-8 sequence) are shown as they are.
TEST(LlamaVocabulary, ByteLevelPiecesOfOtherCharactersStayAsTheyAre) {
    std::vector<std::string> const pieces{"a b", "\xc5\x84", "\xe4\xb8\xad", "x\xc3", "\xc3(", "\xc2\xad"};
    std::vector<std::byte> storage;
    Vocabulary const v = vocabulary("gpt2", pieces, storage);
    for (std::size_t i = 0; i < pieces.size(); ++i) EXPECT_EQ(v.text(static_cast<std::int32_t>(i)), pieces[i]) << i;
}

TEST(LlamaVocabulary, SentencePieceSpacesAndByteTokens) {
    std::vector<std::byte> storage;
    Vocabulary const v = vocabulary("llama", {"\xe2\x96\x81the", "<0x0A>", "<0xC3>", "<0xa9>", "<0xZZ>", "\xc4\xa0x"}, storage);
    EXPECT_EQ(v.text(0), " the");
    EXPECT_EQ(v.text(1), "\n");
    EXPECT_EQ(v.text(2) + v.text(3), "\xc3\xa9");
    EXPECT_EQ(v.text(4), "<0xZZ>");
    EXPECT_EQ(v.text(5), "\xc4\xa0x");  // Ġ is a byte-level character only in "gpt2" vocabularies
}

TEST(LlamaVocabulary, SeedVocabulariesReadAsText) {
    auto const bytes = samples::contents({.vocabulary = samples::Vocabulary::byte_level}).bytes();
    Vocabulary const byte_level(parse(bytes));
    std::string text;
    for (std::int32_t id : {1, 3, 2, 4, 5, 6}) text += byte_level.text(id);
    EXPECT_EQ(text, " thecaf\xc3\xa9\n\xe2\x80\x94 !");

    auto const sp_bytes = samples::contents({.vocabulary = samples::Vocabulary::sentencepiece}).bytes();
    Vocabulary const sentencepiece(parse(sp_bytes));
    text.clear();
    for (std::int32_t id : {6, 7, 4, 5, 9, 3}) text += sentencepiece.text(id);
    EXPECT_EQ(text, " the caf\xc3\xa9.\n");

    auto const none = samples::contents({.vocabulary = samples::Vocabulary::none}).bytes();
    EXPECT_TRUE(Vocabulary(parse(none)).empty());
}

TEST(LlamaVocabulary, TokensOfAnotherTypeRaiseModelError) {
    gguf::Metadata md;
    md.set("tokenizer.ggml.tokens", std::vector<std::uint32_t>{1, 2});
    auto const bytes = gguf::write_to_memory(md, {});
    EXPECT_THROW((void)Vocabulary(parse(bytes)), ModelError);
}

}  // namespace
