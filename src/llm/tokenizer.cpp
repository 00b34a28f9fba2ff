// rayo::llm::Tokenizer (rayo/llm/tokenizer.hpp): the vocabulary read from GGUF metadata, the
// special tokens cut out of the text first, then SentencePiece's merges by score or byte-level
// BPE's merges by rank inside the pre-tokenizer's words; decoding joins the tokens' bytes.
#include "rayo/llm/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "llm/pre_tokenizer.hpp"
#include "llm/unicode.hpp"

namespace rayo::llm {

namespace {

// tokenizer.ggml.token_type, as llama.cpp's converter writes it.
enum class TokenType : std::int32_t { undefined = 0, normal, unknown, control, user_defined, unused, byte };

// How the text between special tokens becomes tokens.
enum class Algorithm {
    sentencepiece,  // "llama": merges by score, byte tokens <0xNN> for the rest
    byte_level,     // "gpt2": pre-tokenizer, GPT-2's byte characters, merges by rank
    gemma4,         // "gemma4": newline runs, UTF-8 with ▁ for spaces, merges by rank, byte tokens <0xNN>
};

constexpr std::string_view space_mark = "\xE2\x96\x81";  // U+2581 ▁, SentencePiece's space

// GPT-2's spelling of bytes as characters: the printable Latin-1 bytes as themselves, the other
// bytes as U+0100 onwards, in order.
class ByteLevelSpelling {
public:
    ByteLevelSpelling() {
        byte_of_.fill(-1);
        char32_t next = 0x100;
        for (unsigned b = 0; b < 256; ++b) {
            bool const printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            char32_t const c = printable ? b : next++;
            unicode::append(spelling_[b], c);
            byte_of_[c] = static_cast<std::int16_t>(b);
        }
    }
    // The UTF-8 of the character that spells byte b.
    [[nodiscard]] std::string const& spelling(unsigned char b) const noexcept { return spelling_[b]; }
    // The byte character c spells, or -1.
    [[nodiscard]] int byte_of(char32_t c) const noexcept { return c < byte_of_.size() ? byte_of_[c] : -1; }

private:
    std::array<std::string, 256> spelling_;
    std::array<std::int16_t, 0x144> byte_of_{};
};

ByteLevelSpelling const& byte_level_spelling() {
    static ByteLevelSpelling const spelling;
    return spelling;
}

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using PieceIndex = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;

// A merge of two tokens into `result`, `rank`-th in tokenizer.ggml.merges.
struct Merge {
    std::int32_t rank;
    std::int32_t result;
};
std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
    return (std::uint64_t{static_cast<std::uint32_t>(left)} << 32) | static_cast<std::uint32_t>(right);
}

// A piece of the text to encode: raw text, or a special token found in it.
struct Fragment {
    std::size_t begin = 0, length = 0;
    std::int32_t token = -1;
};

// The byte a "<0xNN>" piece stands for.
std::optional<unsigned char> byte_piece_value(std::string_view piece) {
    if (piece.size() != 6 || !piece.starts_with("<0x") || piece.back() != '>') return std::nullopt;
    unsigned value = 0;
    for (char c : piece.substr(3, 2)) {
        int const digit = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                 : -1;
        if (digit < 0) return std::nullopt;
        value = value * 16 + static_cast<unsigned>(digit);
    }
    return static_cast<unsigned char>(value);
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t at = 0;;) {
        std::size_t const found = text.find(from, at);
        out.append(text.substr(at, found - at));
        if (found == std::string_view::npos) return out;
        out.append(to);
        at = found + from.size();
    }
}

// Hugging Face's clean_up_tokenization_spaces, as llama.cpp does it: no space before ? ! . , ;
// " ' " becomes "'"; no space before 's 'm 're 've.
std::string clean_up_tokenization_spaces(std::string const& text) {
    auto const pass = [](std::string const& in, auto&& keep) {
        std::string out;
        out.reserve(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) keep(in, i, out);
        return out;
    };
    std::string const no_space_before_punctuation =
        pass(text, [](std::string const& in, std::size_t i, std::string& out) {
            char const x = in[i];
            if (i > 0 && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) out.pop_back();
            out.push_back(x);
        });
    bool skipped = false;  // the space after a lone apostrophe was dropped: it no longer precedes
    std::string const lone_apostrophes =
        pass(no_space_before_punctuation, [&](std::string const& in, std::size_t& i, std::string& out) {
            char const x = in[i];
            bool const after_space = i > 0 && in[i - 1] == ' ' && !skipped;
            skipped = false;
            if (x == '\'' && after_space && i + 1 < in.size() && in[i + 1] == ' ') {
                out.pop_back();
                ++i;
                skipped = true;
            }
            out.push_back(x);
        });
    return pass(lone_apostrophes, [](std::string const& in, std::size_t i, std::string& out) {
        char const x = in[i];
        if (i > 0 && in[i - 1] == ' ' && x == '\'' && i + 1 < in.size()) {
            char const x1 = in[i + 1], x2 = i + 2 < in.size() ? in[i + 2] : '\0';
            if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) out.pop_back();
        }
        out.push_back(x);
    });
}

// The texts of tokens that end a turn or a text in the common chat formats.
// One piece of a word while its characters merge: its bytes, its token (or -1), its neighbours.
struct Symbol {
    std::size_t begin = 0, length = 0;  // length 0: merged into its left neighbour
    std::int32_t id = -1;
    int prev = -1, next = -1;
};

// A merge of two neighbours: its priority (lower first) and the token the two become.
struct Rated {
    double priority;
    std::int32_t result;
};

// Merges neighbouring symbols pairwise, the best rated first (the leftmost among equals), until
// `rate(left, right)` rates no pair. A pair rated before one of its symbols changed is skipped.
template <class Rate>
void merge_pairs(std::vector<Symbol>& symbols, Rate const& rate) {
    struct Candidate {
        Rated rated;
        int left, right;
        std::size_t left_length, right_length;
    };
    auto const later = [](Candidate const& a, Candidate const& b) {
        return a.rated.priority > b.rated.priority || (a.rated.priority == b.rated.priority && a.left > b.left);
    };
    std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
    auto const at = [&](int i) -> Symbol& { return symbols[static_cast<std::size_t>(i)]; };
    auto const consider = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        if (auto const rated = rate(at(left), at(right)))
            queue.push({*rated, left, right, at(left).length, at(right).length});
    };
    for (std::size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue.empty()) {
        Candidate const c = queue.top();
        queue.pop();
        Symbol& l = at(c.left);
        Symbol& r = at(c.right);
        if (l.length != c.left_length || r.length != c.right_length) continue;  // outdated
        l.id = c.rated.result;
        l.length += r.length;
        r.length = 0;
        l.next = r.next;
        if (r.next >= 0) at(r.next).prev = c.left;
        consider(l.prev, c.left);
        consider(c.left, l.next);
    }
}

constexpr std::string_view end_of_generation_texts[] = {
    "<|eot_id|>",      "<|im_end|>",         "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
    "<|end_of_text|>", "<end_of_utterance>", "</s>",    "<eos>",         "<turn|>",
};

}  // namespace

struct Tokenizer::Impl {
    Algorithm algorithm = Algorithm::sentencepiece;
    std::string model, pre;
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<TokenType> types;
    PieceIndex index;
    std::unordered_map<std::uint64_t, Merge> merges;
    std::optional<PreTokenizer> pre_tokenizer;
    std::vector<std::int32_t> special_tokens;     // control, user-defined and unknown: longest first
    std::array<std::int32_t, 256> byte_tokens{};  // <0xNN>, or -1
    std::optional<std::int32_t> bos, eos, unknown, padding;
    std::vector<std::int32_t> end_of_generation;  // sorted
    bool add_bos = false, add_eos = false, add_space_prefix = false, clean_up_spaces = false;
    bool ignore_merges = false;

    [[nodiscard]] std::optional<std::int32_t> find(std::string_view piece) const {
        auto const it = index.find(piece);
        return it == index.end() ? std::nullopt : std::optional(it->second);
    }
    void check(std::int32_t id) const {
        if (id < 0 || static_cast<std::size_t>(id) >= pieces.size())
            throw IndexError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(pieces.size()) + " tokens");
    }

    void read_algorithm(gguf::Metadata const& md);
    void read_tokens(gguf::Metadata const& md);
    void read_merges(gguf::Metadata const& md);
    void read_special_ids(gguf::Metadata const& md);
    void index_special_tokens();

    [[nodiscard]] std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
    [[nodiscard]] std::vector<std::int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
    void encode_sentencepiece(std::string_view text, bool space_prefix, std::vector<std::int32_t>& out) const;
    void encode_byte_level(std::string_view text, std::vector<std::int32_t>& out) const;
    void encode_gemma4(std::string_view text, std::vector<std::int32_t>& out) const;
    void merge_word(std::string_view word, std::vector<std::int32_t>& out) const;
    // The characters of `text` (by their UTF-8 lead bytes) as linked symbols, each with its token.
    [[nodiscard]] std::vector<Symbol> characters(std::string_view text) const {
        std::vector<Symbol> symbols;
        for (std::size_t at = 0; at < text.size();) {
            std::size_t const length = std::min(unicode::sequence_length(text[at]), text.size() - at);
            int const i = static_cast<int>(symbols.size());
            symbols.push_back({at, length, find(text.substr(at, length)).value_or(-1), i - 1, i + 1});
            at += length;
        }
        if (!symbols.empty()) symbols.back().next = -1;
        return symbols;
    }
    void spell_in_bytes(std::string_view text, std::vector<std::int32_t>& out) const;
    [[nodiscard]] std::string piece_text(std::int32_t id, bool render_special) const;
    [[nodiscard]] std::string decode(std::span<std::int32_t const> ids, bool render_special) const;
};

// ---- loading ---------------------------------------------------------------------------------------

namespace {

[[noreturn]] void throw_format(std::string_view key, std::string_view what) {
    throw FormatError(std::string(key) + " " + std::string(what));
}

std::optional<std::int64_t> integer_value(gguf::Metadata const& md, std::string_view key) {
    gguf::Value const* v = md.find(key);
    if (!v) return std::nullopt;
    return std::visit(
        [&](auto const& x) -> std::int64_t {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                return static_cast<std::int64_t>(x);
            } else {
                throw_format(key, "should be an integer, not " + std::string(gguf::to_string(gguf::type_of(*v))));
            }
        },
        *v);
}

std::optional<std::string> string_value(gguf::Metadata const& md, std::string_view key) {
    if (!md.contains(key)) return std::nullopt;
    return md.get<std::string>(key);
}

gguf::Array const* array_value(gguf::Metadata const& md, std::string_view key, std::size_t min_size) {
    gguf::Value const* v = md.find(key);
    if (!v) return nullptr;
    auto const* a = std::get_if<gguf::Array>(v);
    if (!a) throw_format(key, "should be an array, not " + std::string(gguf::to_string(gguf::type_of(*v))));
    if (a->size() < min_size)
        throw_format(key, "has " + std::to_string(a->size()) + " entries for " + std::to_string(min_size) + " tokens");
    return a;
}

}  // namespace

void Tokenizer::Impl::read_tokens(gguf::Metadata const& md) {
    gguf::Array const* tokens = array_value(md, "tokenizer.ggml.tokens", 0);
    if (!tokens || tokens->type() != gguf::ValueType::string)
        throw_format("tokenizer.ggml.tokens", tokens ? "should be an array of strings" : "is missing");
    pieces = tokens->get<std::string>();
    std::size_t const n = pieces.size();
    if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw_format("tokenizer.ggml.tokens", "has too many tokens");
    scores.assign(n, 0.0f);
    if (gguf::Array const* stored = array_value(md, "tokenizer.ggml.scores", n)) {
        if (stored->type() == gguf::ValueType::f32) {
            std::copy_n(stored->get<float>().begin(), n, scores.begin());
        } else if (stored->type() == gguf::ValueType::i32) {
            std::copy_n(stored->get<std::int32_t>().begin(), n, scores.begin());
        } else {
            throw_format("tokenizer.ggml.scores", "should hold f32 or i32 values");
        }
    }
    types.assign(n, TokenType::normal);
    if (gguf::Array const* stored = array_value(md, "tokenizer.ggml.token_type", n)) {
        if (stored->type() != gguf::ValueType::i32) throw_format("tokenizer.ggml.token_type", "should hold i32 values");
        auto const& values = stored->get<std::int32_t>();
        for (std::size_t i = 0; i < n; ++i)
            types[i] = values[i] >= 0 && values[i] <= 6 ? static_cast<TokenType>(values[i]) : TokenType::undefined;
    }
    index.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        if (!pieces[i].empty()) index.insert_or_assign(pieces[i], static_cast<std::int32_t>(i));
}

// Merges "left right" whose parts and result are tokens; the first of repeated pairs counts.
void Tokenizer::Impl::read_merges(gguf::Metadata const& md) {
    gguf::Array const* stored = array_value(md, "tokenizer.ggml.merges", 0);
    if (!stored || stored->type() != gguf::ValueType::string)
        throw_format("tokenizer.ggml.merges", stored ? "should be an array of strings" : "is missing");
    auto const& rules = stored->get<std::string>();
    merges.reserve(rules.size());
    std::string joined;
    for (std::size_t rank = 0; rank < rules.size(); ++rank) {
        std::string_view const rule = rules[rank];
        std::size_t const space = rule.find(' ', 1);
        if (space == std::string_view::npos) continue;
        auto const left = find(rule.substr(0, space)), right = find(rule.substr(space + 1));
        joined.assign(rule.substr(0, space)).append(rule.substr(space + 1));
        auto const result = find(joined);
        if (!left || !right || !result) continue;
        merges.try_emplace(pair_key(*left, *right), Merge{static_cast<std::int32_t>(rank), *result});
    }
}

void Tokenizer::Impl::read_algorithm(gguf::Metadata const& md) {
    auto const stored = string_value(md, "tokenizer.ggml.model");
    if (!stored) throw UnsupportedTokenizer("the file has no tokenizer: tokenizer.ggml.model is missing");
    model = *stored;
    pre = string_value(md, "tokenizer.ggml.pre").value_or("");
    if (model == "llama") {
        algorithm = Algorithm::sentencepiece;
        add_bos = add_space_prefix = true;
    } else if (model == "gpt2") {
        algorithm = Algorithm::byte_level;
        if (pre.empty()) pre = "default";
        pre_tokenizer = PreTokenizer::named(pre);
        if (!pre_tokenizer)
            throw UnsupportedTokenizer(
                "tokenizer.ggml.pre '" + gguf::printable(pre) +
                "' is not a pre-tokenizer rayo::llm knows; it knows: " + PreTokenizer::known_names());
        add_bos = pre_tokenizer->adds_bos();
        ignore_merges = pre_tokenizer->ignores_merges();
        clean_up_spaces = pre_tokenizer->cleans_up_spaces();
    } else if (model == "gemma4") {
        algorithm = Algorithm::gemma4;
        pre = "gemma4";
        pre_tokenizer = PreTokenizer::newline_runs();
        clean_up_spaces = true;
    } else {
        throw UnsupportedTokenizer("tokenizer.ggml.model '" + gguf::printable(model) +
                                   "' is not supported: rayo::llm::Tokenizer runs 'llama' (SentencePiece), "
                                   "'gpt2' (byte-level BPE) and 'gemma4'");
    }
}

void Tokenizer::Impl::read_special_ids(gguf::Metadata const& md) {
    auto const n = static_cast<std::int64_t>(pieces.size());
    auto const id = [&](std::string_view key, std::optional<std::int32_t> fallback) -> std::optional<std::int32_t> {
        std::optional<std::int64_t> const value = integer_value(md, key);
        std::int64_t const v = value.value_or(fallback.value_or(-1));
        return v >= 0 && v < n ? std::optional(static_cast<std::int32_t>(v)) : std::nullopt;
    };
    bool const sentencepiece = algorithm == Algorithm::sentencepiece;
    bos = id("tokenizer.ggml.bos_token_id", sentencepiece ? std::optional(1) : std::nullopt);
    eos = id("tokenizer.ggml.eos_token_id", sentencepiece ? std::optional(2) : std::nullopt);
    unknown = id("tokenizer.ggml.unknown_token_id", sentencepiece ? std::optional(0) : std::nullopt);
    padding = id("tokenizer.ggml.padding_token_id", std::nullopt);
    if (md.contains("tokenizer.ggml.add_bos_token")) add_bos = md.get<bool>("tokenizer.ggml.add_bos_token");
    if (md.contains("tokenizer.ggml.add_eos_token")) add_eos = md.get<bool>("tokenizer.ggml.add_eos_token");
    if (md.contains("tokenizer.ggml.add_space_prefix"))
        add_space_prefix = md.get<bool>("tokenizer.ggml.add_space_prefix");
    if (algorithm == Algorithm::gemma4) add_bos = true;  // as llama.cpp: Gemma 4's files may say otherwise
    add_bos = add_bos && bos;
    add_eos = add_eos && eos;

    for (std::optional<std::int32_t> const end :
         {eos, id("tokenizer.ggml.eot_token_id", std::nullopt), id("tokenizer.ggml.eom_token_id", std::nullopt)})
        if (end) end_of_generation.push_back(*end);
    for (std::string_view text : end_of_generation_texts)
        if (auto const end = find(text)) end_of_generation.push_back(*end);
    std::sort(end_of_generation.begin(), end_of_generation.end());
}

void Tokenizer::Impl::index_special_tokens() {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        TokenType const type = types[i];
        bool const special =
            type == TokenType::control || type == TokenType::user_defined || type == TokenType::unknown;
        if (special && !pieces[i].empty()) special_tokens.push_back(static_cast<std::int32_t>(i));
    }
    // The order llama.cpp looks for them in (the same sort over the same ids).
    std::sort(special_tokens.begin(), special_tokens.end(), [&](std::int32_t a, std::int32_t b) {
        return pieces[static_cast<std::size_t>(a)].size() > pieces[static_cast<std::size_t>(b)].size();
    });
    for (unsigned b = 0; b < 256; ++b) {
        static constexpr char hex[] = "0123456789ABCDEF";
        std::string const piece{'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        std::optional<std::int32_t> id = find(piece);
        if (!id && algorithm == Algorithm::sentencepiece) id = find(std::string(1, static_cast<char>(b)));
        byte_tokens[b] = id.value_or(-1);
    }
}

Tokenizer Tokenizer::from_metadata(gguf::Metadata const& metadata) {
    auto impl = std::make_shared<Impl>();
    impl->read_algorithm(metadata);
    impl->read_tokens(metadata);
    if (impl->algorithm != Algorithm::sentencepiece) impl->read_merges(metadata);
    impl->read_special_ids(metadata);
    impl->index_special_tokens();
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_gguf(gguf::File const& file) { return from_metadata(file.metadata()); }

Tokenizer::Tokenizer(std::shared_ptr<Impl const> impl) : impl_(std::move(impl)) {}

// ---- encoding --------------------------------------------------------------------------------------

std::vector<Fragment> Tokenizer::Impl::split_special(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments, cut;
    if (text.empty()) return fragments;
    fragments.push_back({0, text.size()});
    std::bitset<256> present;
    for (char c : text) present.set(static_cast<unsigned char>(c));
    for (std::int32_t id : special_tokens) {
        std::string_view const special = pieces[static_cast<std::size_t>(id)];
        if (!parse_special && types[static_cast<std::size_t>(id)] != TokenType::user_defined) continue;
        if (!present[static_cast<unsigned char>(special.front())] || text.find(special) == std::string_view::npos)
            continue;
        cut.clear();
        for (Fragment const& f : fragments) {
            if (f.token >= 0) {
                cut.push_back(f);
                continue;
            }
            std::size_t at = f.begin;
            std::size_t const end = f.begin + f.length;
            for (std::size_t found; (found = text.substr(0, end).find(special, at)) != std::string_view::npos;) {
                if (found > at) cut.push_back({at, found - at});
                cut.push_back({found, special.size(), id});
                at = found + special.size();
            }
            if (at < end) cut.push_back({at, end - at});
        }
        fragments.swap(cut);
    }
    return fragments;
}

std::vector<std::int32_t> Tokenizer::Impl::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<std::int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_special && add_bos) out.push_back(*bos);
    bool after_special = true;  // SentencePiece's space prefix goes before the text and after special tokens
    for (Fragment const& f : split_special(text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            after_special = true;
            continue;
        }
        std::string_view const part = text.substr(f.begin, f.length);
        switch (algorithm) {
            case Algorithm::sentencepiece: encode_sentencepiece(part, add_space_prefix && after_special, out); break;
            case Algorithm::byte_level: encode_byte_level(part, out); break;
            case Algorithm::gemma4: encode_gemma4(part, out); break;
        }
        after_special = false;
    }
    if (add_special && add_eos) out.push_back(*eos);
    return out;
}

// Characters (by their UTF-8 lead bytes) merged pairwise, the pair whose joined text is the token
// of the highest score first (the leftmost among equals), until no pair joins into a token.
void Tokenizer::Impl::encode_sentencepiece(std::string_view raw, bool space_prefix,
                                           std::vector<std::int32_t>& out) const {
    std::string const text = replace_all(space_prefix ? " " + std::string(raw) : std::string(raw), " ", space_mark);
    std::vector<Symbol> symbols = characters(text);
    merge_pairs(symbols, [&](Symbol const& l, Symbol const& r) -> std::optional<Rated> {
        auto const id = find(std::string_view(text).substr(l.begin, l.length + r.length));
        if (!id) return std::nullopt;
        return Rated{-double(scores[static_cast<std::size_t>(*id)]), *id};
    });
    for (Symbol const& s : symbols) {
        if (s.length == 0) continue;
        if (s.id >= 0) {
            out.push_back(s.id);
        } else {
            spell_in_bytes(std::string_view(text).substr(s.begin, s.length), out);
        }
    }
}

// Byte tokens for each byte of `text`; the unknown token for a byte without one (or nothing,
// when there is no unknown token either).
void Tokenizer::Impl::spell_in_bytes(std::string_view text, std::vector<std::int32_t>& out) const {
    for (char c : text) {
        std::int32_t const id = byte_tokens[static_cast<unsigned char>(c)];
        if (id >= 0) {
            out.push_back(id);
        } else if (unknown) {
            out.push_back(*unknown);
        }
    }
}

void Tokenizer::Impl::encode_byte_level(std::string_view text, std::vector<std::int32_t>& out) const {
    std::u32string const code_points = unicode::decode(text);
    ByteLevelSpelling const& spelling = byte_level_spelling();
    std::string utf8, word;
    for (auto const& [start, length] : pre_tokenizer->split(code_points)) {
        utf8 = unicode::encode(std::u32string_view(code_points).substr(start, length));
        word.clear();
        for (char c : utf8) word += spelling.spelling(static_cast<unsigned char>(c));
        merge_word(word, out);
    }
}

void Tokenizer::Impl::encode_gemma4(std::string_view text, std::vector<std::int32_t>& out) const {
    std::u32string const code_points = unicode::decode(replace_all(text, " ", space_mark));
    for (auto const& [start, length] : pre_tokenizer->split(code_points)) {
        std::string const word = unicode::encode(std::u32string_view(code_points).substr(start, length));
        std::optional<std::int32_t> const whole = word.front() == '\n' ? find(word) : std::nullopt;
        if (whole) {
            out.push_back(*whole);  // a run of newlines that is a token stays whole
        } else {
            merge_word(word, out);
        }
    }
}

// One word's characters merged pairwise, the pair of lowest rank in tokenizer.ggml.merges first
// (the leftmost among equals), until no pair is a merge.
void Tokenizer::Impl::merge_word(std::string_view word, std::vector<std::int32_t>& out) const {
    if (ignore_merges) {
        if (auto const id = find(word)) {
            out.push_back(*id);
            return;
        }
    }
    std::vector<Symbol> symbols = characters(word);
    merge_pairs(symbols, [&](Symbol const& l, Symbol const& r) -> std::optional<Rated> {
        if (l.id < 0 || r.id < 0) return std::nullopt;
        auto const it = merges.find(pair_key(l.id, r.id));
        if (it == merges.end()) return std::nullopt;
        return Rated{double(it->second.rank), it->second.result};
    });
    for (Symbol const& s : symbols) {
        if (s.length == 0) continue;
        if (s.id >= 0) {
            out.push_back(s.id);
        } else if (algorithm == Algorithm::gemma4) {
            spell_in_bytes(word.substr(s.begin, s.length), out);
        } else if (unknown) {
            out.push_back(*unknown);  // a byte character missing from the vocabulary
        }
    }
}

// ---- decoding --------------------------------------------------------------------------------------

std::string Tokenizer::Impl::piece_text(std::int32_t id, bool render_special) const {
    std::string const& piece = pieces[static_cast<std::size_t>(id)];
    switch (types[static_cast<std::size_t>(id)]) {
        case TokenType::control:
        case TokenType::unknown: return render_special ? piece : std::string();
        case TokenType::user_defined: return piece;
        case TokenType::byte: {
            auto const value = byte_piece_value(piece);
            return value ? std::string(1, static_cast<char>(*value)) : piece;
        }
        case TokenType::normal: break;
        default: return {};  // unused and undefined tokens stand for nothing
    }
    if (algorithm != Algorithm::byte_level) return replace_all(piece, space_mark, " ");
    std::string text;
    ByteLevelSpelling const& spelling = byte_level_spelling();
    for (char32_t c : unicode::decode(piece)) {
        int const b = spelling.byte_of(c);
        if (b >= 0) {
            text.push_back(static_cast<char>(b));
        } else {
            unicode::append(text, c);  // not a byte character: kept as it is
        }
    }
    return text;
}

std::string Tokenizer::Impl::decode(std::span<std::int32_t const> ids, bool render_special) const {
    std::string text;
    bool strip_space = add_space_prefix;
    for (std::int32_t id : ids) {
        check(id);
        std::string piece = piece_text(id, render_special);
        if (piece.empty()) continue;
        if (strip_space && piece.front() == ' ') piece.erase(0, 1);
        strip_space = false;
        text += piece;
    }
    return clean_up_spaces ? clean_up_tokenization_spaces(text) : text;
}

// ---- the public interface ----------------------------------------------------------------------------

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    return impl_->encode(text, add_special, parse_special);
}

std::string Tokenizer::decode(std::span<std::int32_t const> ids, bool render_special) const {
    return impl_->decode(ids, render_special);
}

std::string Tokenizer::token_text(std::int32_t id, bool render_special) const {
    impl_->check(id);
    return impl_->piece_text(id, render_special);
}

std::string_view Tokenizer::token_piece(std::int32_t id) const {
    impl_->check(id);
    return impl_->pieces[static_cast<std::size_t>(id)];
}

std::optional<std::int32_t> Tokenizer::find(std::string_view piece) const { return impl_->find(piece); }

std::size_t Tokenizer::vocab_size() const noexcept { return impl_->pieces.size(); }
std::optional<std::int32_t> Tokenizer::bos() const noexcept { return impl_->bos; }
std::optional<std::int32_t> Tokenizer::eos() const noexcept { return impl_->eos; }
std::optional<std::int32_t> Tokenizer::unknown() const noexcept { return impl_->unknown; }
std::optional<std::int32_t> Tokenizer::padding() const noexcept { return impl_->padding; }
bool Tokenizer::adds_bos() const noexcept { return impl_->add_bos; }
bool Tokenizer::adds_eos() const noexcept { return impl_->add_eos; }
std::string_view Tokenizer::model() const noexcept { return impl_->model; }
std::string_view Tokenizer::pre() const noexcept { return impl_->pre; }

bool Tokenizer::is_end_of_generation(std::int32_t id) const noexcept {
    return std::binary_search(impl_->end_of_generation.begin(), impl_->end_of_generation.end(), id);
}

}  // namespace rayo::llm
