// rayo::llm::PreTokenizer (llm/pre_tokenizer.hpp): the patterns of each known pre-tokenizer, as
// the models' Hugging Face tokenizers write them. Case-insensitive groups, (?i:'s|'t|...), are
// written out as (?:'[sS]|'[tT]|...).
#include "llm/pre_tokenizer.hpp"

#include <string>
#include <vector>

namespace rayo::llm {

namespace {

// GPT-2's words: contractions, then letters, digits or other symbols with one space before them.
constexpr std::string_view gpt2_words =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
constexpr std::string_view contractions = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))re";
// What follows the contractions in Llama 3's and Qwen 2's patterns: letters with one other
// character before them, digits (`digits`), other symbols with the newlines after them, newlines
// with the white space before them, white space.
constexpr std::string_view llama3_tail =
    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view qwen2_tail =
    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view qwen35_tail =
    R"re(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view seed_coder_tail =
    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Words in GPT-4o's and Mistral's Tekken patterns: upper-case letters then lower-case ones, or
// the other way round.
constexpr std::string_view cased_lower_word =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)re";
constexpr std::string_view cased_upper_word =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)re";
constexpr std::string_view cased_tail = R"re( ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view bloom_words = R"re( ?[^(\s|.,!?…。，、।۔،)]+)re";
constexpr std::string_view cjk_runs = "[一-龥ࠀ-一가-\uD7FF]+";
constexpr std::string_view deepseek_llm_letters =
    R"re(\s?[)re"
    "A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-Ֆ"
    "Ⴀ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅ"
    "ὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼ"
    "ℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤ"
    "Ⳬ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ"
    "𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃"
    "]+";
constexpr std::string_view deepseek_llm_symbols = R"re(\s?[!-/:-~！-／：-～‘-‟)re"
                                                  "\u3000"
                                                  R"re(-。]+)re";
constexpr std::string_view deepseek_v3_words =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)re"
    R"re(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view bailing_words =
    R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*)re"
    R"re(|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr std::string_view ufakzeka_words =
    R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

std::string join(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (std::string_view p : parts) out += p;
    return out;
}

struct Kind {
    std::vector<std::string_view> names;
    std::vector<std::string> patterns;
    bool ignore_merges = false, add_bos = false, clean_up_spaces = true;
};

// The pre-tokenizers, with the settings llama.cpp gives each name.
std::vector<Kind> make_kinds() {
    std::string const llama3 = join({contractions, llama3_tail}), qwen2 = join({contractions, qwen2_tail});
    std::string const gpt2(gpt2_words), bloom(bloom_words);
    std::string const gpt4o = join(
        {cased_lower_word, contractions, "?|", cased_upper_word, contractions, R"re(?|\p{N}{1,3}|)re", cased_tail});
    std::string const tekken = join({cased_lower_word, "|", cased_upper_word, R"re(|\p{N}|)re", cased_tail});
    return {
        // llama.cpp's own default: punctuation runs, GPT-2's words, digit runs cut in threes.
        {{"default"}, {R"re([\p{P}\$\+<=>\^~\|]+)re", gpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"}},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
         {llama3},
         true,
         true},
        {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {llama3}},
        {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "exaone4", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de",
          "gigachat", "a.x-4.0", "mellum", "modern-bert"},
         {gpt2}},
        {{"trillion", "granite-docling"}, {gpt2}, false, false, false},
        {{"falcon"}, {R"re([\p{P}\$\+<=>\^~\|`]+)re", gpt2, "[0-9][0-9][0-9]"}},
        {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"}, {R"re(\p{N})re", gpt2}},
        {{"command-r", "smollm"}, {R"re(\p{N})re", gpt2}, false, false, false},
        {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"},
         {qwen2},
         false,
         false,
         false},
        {{"stablelm2", "megrez"}, {qwen2}},
        {{"qwen35"}, {join({contractions, qwen35_tail})}, false, false, false},
        {{"seed-coder"}, {join({contractions, seed_coder_tail})}, false, false, false},
        {{"deepseek-llm"},
         {R"re([\r\n])re", std::string(deepseek_llm_letters), std::string(deepseek_llm_symbols), R"re(\s+$)re",
          std::string(cjk_runs), R"re(\p{N}+)re"},
         false,
         false,
         false},
        {{"deepseek-coder"},
         {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", std::string(cjk_runs), R"re(\p{N})re"},
         false,
         false,
         false},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
         {R"re(\p{N}{1,3})re", "[一-龥぀-ゟ゠-ヿ]+", std::string(deepseek_v3_words)},
         false,
         false,
         false},
        {{"bloom", "gpt3-finnish"}, {bloom}},
        {{"poro-chat"}, {bloom}, false, false, false},
        {{"viking"}, {bloom, R"re(\p{N})re"}, false, false, false},
        {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {gpt4o}, false, false, false},
        {{"tekken"}, {tekken}, true, true, false},
        {{"bailingmoe", "bailingmoe2", "llada-moe"}, {std::string(bailing_words)}, false, false, false},
        {{"ufakzeka"}, {std::string(ufakzeka_words)}, false, false, false},
    };
}

std::vector<Kind> const& kinds() {
    static std::vector<Kind> const table = make_kinds();
    return table;
}

}  // namespace

std::optional<PreTokenizer> PreTokenizer::named(std::string_view name) {
    for (Kind const& kind : kinds()) {
        for (std::string_view known : kind.names) {
            if (known != name) continue;
            PreTokenizer pre;
            for (std::string const& p : kind.patterns) pre.patterns_.emplace_back(p);
            pre.ignore_merges_ = kind.ignore_merges;
            pre.add_bos_ = kind.add_bos;
            pre.clean_up_spaces_ = kind.clean_up_spaces;
            return pre;
        }
    }
    return std::nullopt;
}

std::string PreTokenizer::known_names() {
    std::string out;
    for (Kind const& kind : kinds()) {
        for (std::string_view name : kind.names) {
            if (!out.empty()) out += ", ";
            out += name;
        }
    }
    return out;
}

PreTokenizer PreTokenizer::newline_runs() {
    PreTokenizer pre;
    pre.patterns_.emplace_back(R"re([^\n]+|\n+)re");
    return pre;
}

std::vector<std::pair<std::size_t, std::size_t>> PreTokenizer::split(std::u32string_view text) const {
    std::vector<std::pair<std::size_t, std::size_t>> pieces, cut;
    if (!text.empty()) pieces.emplace_back(0, text.size());
    for (Pattern const& pattern : patterns_) {
        cut.clear();
        for (auto const& [start, length] : pieces) {
            std::u32string_view const piece = text.substr(start, length);
            std::size_t done = 0;  // the piece's code points already cut
            for (std::size_t at = 0; at < piece.size(); ++at) {
                std::size_t const end = pattern.match(piece, at);
                if (end == Pattern::no_match) continue;
                if (at > done) cut.emplace_back(start + done, at - done);
                cut.emplace_back(start + at, end - at);
                done = end;
                at = end - 1;
            }
            if (done < piece.size()) cut.emplace_back(start + done, piece.size() - done);
        }
        pieces.swap(cut);
    }
    return pieces;
}

}  // namespace rayo::llm
