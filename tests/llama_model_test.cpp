// rayo::llm's model loader on the llama fuzzer's seed files
// (tests/support/llama_samples.hpp): the valid models run, the broken ones are refused with a
// message naming the problem; and the text of SentencePiece and byte-level BPE tokens.
#include <gtest/gtest.h>

#include <rayo/rayo.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <rayo/llm.hpp>
#include "support/llama_samples.hpp"

namespace {

namespace samples = rayo::test::llama_samples;
namespace gguf = rayo::gguf;
using rayo::llm::Model;
using rayo::llm::ModelError;
using rayo::llm::Tokenizer;

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

// ---- the tokens' text -------------------------------------------------------------------------------

// A tokenizer of `tokens` (all normal, or of `types`); byte-level vocabularies get no merges.
Tokenizer tokenizer(char const* model, std::vector<std::string> tokens, std::vector<std::int32_t> types = {}) {
    gguf::Metadata md;
    md.set("tokenizer.ggml.model", model);
    if (types.empty()) types.assign(tokens.size(), 1);
    md.set("tokenizer.ggml.tokens", std::move(tokens));
    md.set("tokenizer.ggml.token_type", std::move(types));
    md.set("tokenizer.ggml.merges", std::vector<std::string>{});
    return Tokenizer::from_metadata(md);
}

TEST(LlamaTokenText, ByteLevelCharactersMapBackToBytes) {
    Tokenizer const v = tokenizer("gpt2",
                                  {"\xc4\xa0hello",                     // Ġhello
                                   "\xc4\x8a", "\xc4\x89",              // Ċ ĉ: newline, tab
                                   "caf\xc3\x83\xc2\xa9",               // cafÃ©: café
                                   "\xc3\xa2\xc4\xa2\xc4\xb6",          // âĢĶ: an em dash
                                   "\xc4\x80", "\xc4\xa1", "\xc5\x83",  // Ā ġ Ń: bytes 0x00, 0x7f, 0xad
                                   "\xc2\xa1\xc2\xae\xc3\xbf", "!~"});  // ¡®ÿ and ASCII: themselves
    EXPECT_EQ(v.token_text(0), " hello");
    EXPECT_EQ(v.token_text(1), "\n");
    EXPECT_EQ(v.token_text(2), "\t");
    EXPECT_EQ(v.token_text(3), "caf\xc3\xa9");
    EXPECT_EQ(v.token_text(4), "\xe2\x80\x94");
    EXPECT_EQ(v.token_text(5), std::string(1, '\0'));
    EXPECT_EQ(v.token_text(6), "\x7f");
    EXPECT_EQ(v.token_text(7), "\xad");
    EXPECT_EQ(v.token_text(8), "\xa1\xae\xff");
    EXPECT_EQ(v.token_text(9), "!~");
    EXPECT_THROW((void)v.token_text(10), rayo::IndexError);
    EXPECT_THROW((void)v.token_text(-1), rayo::IndexError);
}

// Pieces that are no byte-level spelling (a raw space, a character past the 256 byte characters)
// are shown as they are; a broken UTF-8 sequence in a piece reads as U+FFFD.
TEST(LlamaTokenText, ByteLevelPiecesOfOtherCharactersStayAsTheyAre) {
    std::vector<std::string> const pieces{"a b", "\xc5\x84", "\xe4\xb8\xad", "\xc2\xad", "x\xc3", "\xc3("};
    Tokenizer const v = tokenizer("gpt2", pieces);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(v.token_text(static_cast<std::int32_t>(i)), pieces[i]) << i;
    EXPECT_EQ(v.token_text(4), "x\xef\xbf\xbd");
    EXPECT_EQ(v.token_text(5), "\xef\xbf\xbd(");
}

TEST(LlamaTokenText, SentencePieceSpacesAndByteTokens) {
    Tokenizer const v = tokenizer("llama", {"\xe2\x96\x81the", "<0x0A>", "<0xC3>", "<0xa9>", "<0xZZ>", "\xc4\xa0x"},
                                  {1, 6, 6, 6, 6, 1});
    EXPECT_EQ(v.token_text(0), " the");
    EXPECT_EQ(v.token_text(1), "\n");
    EXPECT_EQ(v.token_text(2) + v.token_text(3), "\xc3\xa9");
    EXPECT_EQ(v.token_text(4), "<0xZZ>");
    EXPECT_EQ(v.token_text(5), "\xc4\xa0x");  // Ġ is a byte-level character only in "gpt2" vocabularies
}

TEST(LlamaTokenText, SeedVocabulariesReadAsText) {
    auto const bytes = samples::contents({.vocabulary = samples::Vocabulary::byte_level}).bytes();
    Tokenizer const byte_level = Tokenizer::from_gguf(parse(bytes));
    std::string text;
    for (std::int32_t id : {1, 3, 2, 4, 5, 6}) text += byte_level.token_text(id);
    EXPECT_EQ(text, " thecaf\xc3\xa9\n\xe2\x80\x94 !");

    auto const sp_bytes = samples::contents({.vocabulary = samples::Vocabulary::sentencepiece}).bytes();
    Tokenizer const sentencepiece = Tokenizer::from_gguf(parse(sp_bytes));
    text.clear();
    for (std::int32_t id : {6, 7, 4, 5, 9, 3}) text += sentencepiece.token_text(id);
    EXPECT_EQ(text, " the caf\xc3\xa9.\n");

    auto const none = samples::contents({.vocabulary = samples::Vocabulary::none}).bytes();
    EXPECT_THROW((void)Tokenizer::from_gguf(parse(none)), rayo::llm::UnsupportedTokenizer);
}

TEST(LlamaTokenText, TokensOfAnotherTypeAreAFormatError) {
    gguf::Metadata md;
    md.set("tokenizer.ggml.model", "llama");
    md.set("tokenizer.ggml.tokens", std::vector<std::uint32_t>{1, 2});
    EXPECT_THROW((void)Tokenizer::from_metadata(md), rayo::FormatError);
}

}  // namespace
