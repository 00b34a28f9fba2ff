// rayo::llm::Tokenizer: SentencePiece and byte-level BPE on small vocabularies written here (every
// rule checked by hand), the errors, and — when RAYO_LLAMA_CPP_MODELS names llama.cpp's `models`
// folder (scripts/fetch-llama-cpp-vocabularies) — agreement with llama.cpp's own tokenizer test
// vectors, ggml-vocab-*.gguf with their .inp/.out files, for every vocabulary rayo runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <rayo/llm.hpp>

namespace {

namespace gguf = rayo::gguf;
using rayo::llm::Tokenizer;
using rayo::llm::UnsupportedTokenizer;
using Ids = std::vector<std::int32_t>;

constexpr std::int32_t normal = 1, unknown_type = 2, control = 3, user_defined = 4, byte_type = 6;

std::string message_of(auto&& f) {
    try {
        f();
    } catch (std::exception const& e) {
        return e.what();
    }
    return "(nothing thrown)";
}

// ---- SentencePiece ---------------------------------------------------------------------------------

// <unk> <s> </s>, the 256 byte tokens, then pieces with scores: "▁a" < "▁ab" < "▁abc".
gguf::Metadata sentencepiece_vocabulary() {
    std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
    std::vector<float> scores{0, 0, 0};
    std::vector<std::int32_t> types{unknown_type, control, control};
    static constexpr char hex[] = "0123456789ABCDEF";
    for (unsigned b = 0; b < 256; ++b) {
        tokens.push_back(std::string{'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'});
        scores.push_back(0);
        types.push_back(byte_type);
    }
    for (auto const& [piece, score] : std::vector<std::pair<std::string, float>>{{"\xE2\x96\x81", -1},
                                                                                 {"a", -2},
                                                                                 {"b", -2},
                                                                                 {"c", -2},
                                                                                 {"\xE2\x96\x81"
                                                                                  "a",
                                                                                  -3},
                                                                                 {"\xE2\x96\x81"
                                                                                  "ab",
                                                                                  -1},
                                                                                 {"ab", -5},
                                                                                 {"bc", -0.5f},
                                                                                 {"\xE2\x96\x81"
                                                                                  "abc",
                                                                                  -4},
                                                                                 {"<|end|>", 0},
                                                                                 {"<mark>", 0}}) {
        tokens.push_back(piece);
        scores.push_back(score);
        types.push_back(piece == "<|end|>" ? control : piece == "<mark>" ? user_defined : normal);
    }
    gguf::Metadata md;
    md.set("tokenizer.ggml.model", "llama");
    md.set("tokenizer.ggml.tokens", tokens);
    md.set("tokenizer.ggml.scores", scores);
    md.set("tokenizer.ggml.token_type", types);
    return md;
}

std::int32_t id_of(Tokenizer const& t, std::string_view piece) {
    auto const id = t.find(piece);
    EXPECT_TRUE(id.has_value()) << piece;
    return id.value_or(-1);
}

TEST(Tokenizer, SentencePieceMergesTheBestScoredPairFirst) {
    Tokenizer const t = Tokenizer::from_metadata(sentencepiece_vocabulary());
    EXPECT_EQ(t.model(), "llama");
    EXPECT_EQ(t.bos(), 1);
    EXPECT_EQ(t.eos(), 2);
    EXPECT_TRUE(t.adds_bos());
    // "▁abc": b+c (-0.5) merges first, then ▁+a (-3) (a+bc is no token), then ▁a+bc → ▁abc.
    EXPECT_EQ(t.encode("abc", false), (Ids{id_of(t,
                                                 "\xE2\x96\x81"
                                                 "abc")}));
    // "▁cab": no ▁c; a+b (-5) → [▁, c, ab].
    EXPECT_EQ(t.encode("cab", false), (Ids{id_of(t, "\xE2\x96\x81"), id_of(t, "c"), id_of(t, "ab")}));
    // "▁ab": ▁+a first (-3 beats a+b's -5), then ▁a+b → ▁ab.
    EXPECT_EQ(t.encode("ab"), (Ids{1, id_of(t,
                                            "\xE2\x96\x81"
                                            "ab")}));
    // What is not a token is spelled in bytes: "é" is C3 A9.
    EXPECT_EQ(t.encode("\xC3\xA9", false), (Ids{id_of(t, "\xE2\x96\x81"), 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(t.decode(t.encode("ab abc \xC3\xA9")), "ab abc \xC3\xA9");
}

TEST(Tokenizer, SentencePieceSpecialTokensAreParsedOnlyWhenAsked) {
    Tokenizer const t = Tokenizer::from_metadata(sentencepiece_vocabulary());
    std::int32_t const end = id_of(t, "<|end|>");
    Ids const parsed = t.encode("a<|end|>a", false, true);
    EXPECT_EQ(parsed, (Ids{id_of(t,
                                 "\xE2\x96\x81"
                                 "a"),
                           end,
                           id_of(t,
                                 "\xE2\x96\x81"
                                 "a")}));
    Ids const plain = t.encode("a<|end|>a", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), end), 0);
    EXPECT_EQ(t.decode(plain), "a<|end|>a");
    EXPECT_EQ(t.decode(parsed), "a a");
    EXPECT_EQ(t.decode(parsed, true), "a<|end|> a");
    // User-defined tokens are found whether or not special tokens are parsed, and are their text.
    std::int32_t const mark = id_of(t, "<mark>");
    EXPECT_EQ(t.encode("a<mark>", false, false), (Ids{id_of(t,
                                                            "\xE2\x96\x81"
                                                            "a"),
                                                      mark}));
    EXPECT_EQ(t.decode(Ids{mark}), "<mark>");
    EXPECT_TRUE(t.is_end_of_generation(2));
    EXPECT_FALSE(t.is_end_of_generation(id_of(t, "a")));
}

TEST(Tokenizer, SentencePieceKeepsEveryByteOfInvalidUtf8) {
    Tokenizer const t = Tokenizer::from_metadata(sentencepiece_vocabulary());
    std::string const broken = "a\xFF\xC3(\x80";
    Ids const ids = t.encode(broken, false);
    EXPECT_EQ(t.decode(ids), broken);
}

TEST(Tokenizer, SentencePieceWithoutSpacePrefix) {
    gguf::Metadata md = sentencepiece_vocabulary();
    md.set("tokenizer.ggml.add_space_prefix", false);
    md.set("tokenizer.ggml.add_bos_token", false);
    Tokenizer const t = Tokenizer::from_metadata(md);
    EXPECT_FALSE(t.adds_bos());
    EXPECT_EQ(t.encode("ab"), (Ids{id_of(t, "ab")}));
    EXPECT_EQ(t.encode(" ab"), (Ids{id_of(t,
                                          "\xE2\x96\x81"
                                          "ab")}));
    EXPECT_EQ(t.decode(t.encode(" ab")), " ab");
}

// ---- byte-level BPE --------------------------------------------------------------------------------

// GPT-2's byte characters as tokens 0..255 (in byte order), then merges: "Ġ t"→"Ġt", "h e"→"he",
// "Ġt he"→"Ġthe", "e r"→"er", "1 2"→"12", "3 4"→"34", "12 3"→"123", "4 5"→"45"; the special
// "<|endoftext|>" (id 260).
gguf::Metadata byte_level_vocabulary(std::string pre) {
    std::vector<std::string> tokens;
    unsigned next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
        bool const printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned const c = printable ? b : next++;
        std::string s;
        if (c < 0x80) {
            s.push_back(static_cast<char>(c));
        } else {
            s.push_back(static_cast<char>(0xC0 | (c >> 6)));
            s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
        }
        tokens.push_back(s);
    }
    std::vector<std::int32_t> types(256, normal);
    for (std::string_view extra : {"\xC4\xA0t", "he", "\xC4\xA0the", "er", "<|endoftext|>", "12", "34", "123", "45"}) {
        tokens.emplace_back(extra);
        types.push_back(extra.starts_with("<|") ? control : normal);
    }
    gguf::Metadata md;
    md.set("tokenizer.ggml.model", "gpt2");
    md.set("tokenizer.ggml.pre", std::move(pre));
    md.set("tokenizer.ggml.tokens", tokens);
    md.set("tokenizer.ggml.token_type", types);
    md.set("tokenizer.ggml.merges",
           std::vector<std::string>{"\xC4\xA0 t", "h e", "\xC4\xA0t he", "e r", "1 2", "3 4", "12 3", "4 5"});
    md.set("tokenizer.ggml.eos_token_id", std::uint32_t{260});
    return md;
}

TEST(Tokenizer, ByteLevelMergesByRankInsideEachWord) {
    for (std::string pre : {"gpt-2", "llama-bpe", "qwen2", "default"}) {
        SCOPED_TRACE(pre);
        Tokenizer const t = Tokenizer::from_metadata(byte_level_vocabulary(pre));
        EXPECT_EQ(t.pre(), pre);
        // " the" → Ġ t h e → Ġt (rank 0), he (rank 1) → Ġthe (rank 2).
        Ids const the = t.encode(" the", false);
        EXPECT_EQ(the, (Ids{id_of(t, "\xC4\xA0the")}));
        // "her": h e r: "h e" (rank 1) beats "e r" (rank 3) → [he, r].
        EXPECT_EQ(t.encode("her", false), (Ids{id_of(t, "he"), 'r'}));
        std::string const text = "The other\n\t 12345 h\xC3\xA9llo, \xF0\x9F\xA6\x99!";
        EXPECT_EQ(t.decode(t.encode(text, false)), text);
    }
}

TEST(Tokenizer, ByteLevelPreTokenizersCutWordsTheirOwnWay) {
    auto const encode = [](std::string pre, std::string_view text) {
        Tokenizer const t = Tokenizer::from_metadata(byte_level_vocabulary(std::move(pre)));
        return t.encode(text, false);
    };
    std::int32_t const n12 = 261, n34 = 262, n123 = 263, n45 = 264;
    // GPT-2: one run of digits, merged by rank: 1+2, 3+4, then 12+3 is gone → [12, 34, 5].
    EXPECT_EQ(encode("gpt-2", "12345"), (Ids{n12, n34, '5'}));
    // Llama 3: digits in threes, "123" and "45" merged on their own.
    EXPECT_EQ(encode("llama-bpe", "12345"), (Ids{n123, n45}));
    // Qwen 2: each digit its own word.
    EXPECT_EQ(encode("qwen2", "12345"), (Ids{'1', '2', '3', '4', '5'}));

    Tokenizer const llama3 = Tokenizer::from_metadata(byte_level_vocabulary("llama-bpe"));
    EXPECT_FALSE(llama3.adds_bos());  // no BOS id in this vocabulary
    EXPECT_EQ(llama3.encode("<|endoftext|>", false, true), (Ids{260}));
    EXPECT_EQ(llama3.encode("<|endoftext|>", false, false).size(), 13u);
    EXPECT_TRUE(llama3.is_end_of_generation(260));
}

TEST(Tokenizer, ByteLevelReadsInvalidUtf8AsReplacementCharacters) {
    Tokenizer const t = Tokenizer::from_metadata(byte_level_vocabulary("llama-bpe"));
    Ids const ids = t.encode(
        "a\xFF"
        "b\xE2\x82",
        false);
    // U+FFFD is EF BF BD: three byte tokens for each bad byte.
    EXPECT_EQ(t.decode(ids),
              "a\xEF\xBF\xBD"
              "b\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Tokenizer, EmptyTextGivesOnlyTheSpecialTokensAsked) {
    Tokenizer const spm = Tokenizer::from_metadata(sentencepiece_vocabulary());
    EXPECT_EQ(spm.encode("", false), Ids{});
    EXPECT_EQ(spm.encode(""), (Ids{1}));
    EXPECT_EQ(spm.decode(Ids{}), "");
    Tokenizer const bpe = Tokenizer::from_metadata(byte_level_vocabulary("qwen2"));
    EXPECT_EQ(bpe.encode(""), Ids{});
}

TEST(Tokenizer, ErrorsNameTheProblem) {
    gguf::Metadata md = byte_level_vocabulary("no-such-pre");
    std::string m = message_of([&] { (void)Tokenizer::from_metadata(md); });
    EXPECT_NE(m.find("no-such-pre"), std::string::npos) << m;
    EXPECT_NE(m.find("llama-bpe"), std::string::npos) << m;
    EXPECT_THROW((void)Tokenizer::from_metadata(md), UnsupportedTokenizer);

    md.set("tokenizer.ggml.model", "bert");
    m = message_of([&] { (void)Tokenizer::from_metadata(md); });
    EXPECT_NE(m.find("bert"), std::string::npos) << m;

    md = byte_level_vocabulary("gpt-2");
    md.erase("tokenizer.ggml.merges");
    m = message_of([&] { (void)Tokenizer::from_metadata(md); });
    EXPECT_NE(m.find("tokenizer.ggml.merges"), std::string::npos) << m;

    md = sentencepiece_vocabulary();
    md.set("tokenizer.ggml.scores", std::vector<float>{1.0f});
    m = message_of([&] { (void)Tokenizer::from_metadata(md); });
    EXPECT_NE(m.find("tokenizer.ggml.scores"), std::string::npos) << m;

    gguf::Metadata none;
    EXPECT_THROW((void)Tokenizer::from_metadata(none), UnsupportedTokenizer);

    Tokenizer const t = Tokenizer::from_metadata(sentencepiece_vocabulary());
    Ids const bad{1, static_cast<std::int32_t>(t.vocab_size())};
    m = message_of([&] { (void)t.decode(bad); });
    EXPECT_NE(m.find(std::to_string(t.vocab_size())), std::string::npos) << m;
    EXPECT_THROW((void)t.token_text(-1), rayo::IndexError);
}

// ---- llama.cpp's test vectors ----------------------------------------------------------------------

struct Vectors {
    std::vector<std::pair<std::string, Ids>> cases;
};

// llama.cpp's format: the texts separated by "\n__ggml_vocab_test__\n", one line of ids each.
Vectors read_vectors(std::filesystem::path const& gguf_path) {
    auto slurp = [](std::filesystem::path const& p) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    };
    std::string const inputs = slurp(gguf_path.string() + ".inp"), outputs = slurp(gguf_path.string() + ".out");
    std::vector<std::string> texts;
    std::string_view const separator = "\n__ggml_vocab_test__\n";
    for (std::size_t at = 0; at < inputs.size();) {
        std::size_t const next = inputs.find(separator, at);
        texts.push_back(inputs.substr(at, next == std::string::npos ? std::string::npos : next - at));
        if (next == std::string::npos) break;
        at = next + separator.size();
    }
    Vectors v;
    std::istringstream lines(outputs);
    std::string line;
    for (std::string const& text : texts) {
        if (!std::getline(lines, line)) break;
        Ids ids;
        std::istringstream numbers(line);
        for (std::int32_t id; numbers >> id;) ids.push_back(id);
        v.cases.emplace_back(text, std::move(ids));
    }
    EXPECT_EQ(v.cases.size(), texts.size()) << gguf_path;
    return v;
}

// The vocabularies rayo runs, by the name in ggml-vocab-NAME.gguf.
constexpr std::string_view supported[] = {
    "llama-spm", "phi-3",     "llama-bpe", "qwen2",     "qwen35",       "gpt-2",          "falcon",
    "mpt",       "starcoder", "refact",    "command-r", "deepseek-llm", "deepseek-coder", "gemma-4"};
// And those it refuses by name (WordPiece).
constexpr std::string_view refused[] = {"bert-bge", "nomic-bert-moe"};

std::filesystem::path llama_cpp_models() {
    char const* dir = std::getenv("RAYO_LLAMA_CPP_MODELS");
    return dir ? std::filesystem::path(dir) : std::filesystem::path();
}

TEST(TokenizerLlamaCppVectors, EveryCaseOfEverySupportedVocabulary) {
    std::filesystem::path const dir = llama_cpp_models();
    if (dir.empty()) GTEST_SKIP() << "RAYO_LLAMA_CPP_MODELS is not set (scripts/fetch-llama-cpp-vocabularies)";
    std::size_t checked = 0;
    for (std::string_view name : supported) {
        std::filesystem::path const path = dir / ("ggml-vocab-" + std::string(name) + ".gguf");
        SCOPED_TRACE(path.string());
        ASSERT_TRUE(std::filesystem::exists(path));
        Tokenizer const t = Tokenizer::from_gguf(gguf::File::open(path));
        std::size_t failed = 0;
        for (auto const& [text, expected] : read_vectors(path).cases) {
            Ids const got = t.encode(text, false, false);
            ++checked;
            if (got == expected) continue;
            if (++failed <= 5)
                ADD_FAILURE() << "text '" << text << "': " << testing::PrintToString(got) << " instead of "
                              << testing::PrintToString(expected);
        }
        EXPECT_EQ(failed, 0u);
    }
    EXPECT_GE(checked, 600u);  // 661 in llama.cpp v0.5.0's files
    for (std::string_view name : refused) {
        std::filesystem::path const path = dir / ("ggml-vocab-" + std::string(name) + ".gguf");
        EXPECT_THROW((void)Tokenizer::from_gguf(gguf::File::open(path)), UnsupportedTokenizer) << path;
    }
}

TEST(TokenizerLlamaCppVectors, FourThreadsEncodeTheSameIds) {
    std::filesystem::path const dir = llama_cpp_models();
    if (dir.empty()) GTEST_SKIP() << "RAYO_LLAMA_CPP_MODELS is not set";
    std::filesystem::path const path = dir / "ggml-vocab-llama-bpe.gguf";
    Tokenizer const t = Tokenizer::from_gguf(gguf::File::open(path));
    Vectors const v = read_vectors(path);
    std::vector<std::thread> threads;
    std::vector<int> wrong(4, 0);
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&, i] {
            for (auto const& [text, expected] : v.cases)
                wrong[static_cast<std::size_t>(i)] += t.encode(text, false) != expected;
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong, (std::vector<int>(4, 0)));
}

}  // namespace
