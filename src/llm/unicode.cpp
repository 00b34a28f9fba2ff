// UTF-8 and Unicode properties for rayo::llm's tokenizers (llm/unicode.hpp).
#include "llm/unicode.hpp"

#include <algorithm>
#include <array>
#include <memory>

namespace rayo::llm::unicode {

namespace {

constexpr char32_t first_astral = 0x10000;

constexpr CategorySet letters =
    bit(Category::Lu) | bit(Category::Ll) | bit(Category::Lt) | bit(Category::Lm) | bit(Category::Lo);
constexpr CategorySet marks = bit(Category::Mn) | bit(Category::Mc) | bit(Category::Me);
constexpr CategorySet numbers = bit(Category::Nd) | bit(Category::Nl) | bit(Category::No);
constexpr CategorySet punctuation = bit(Category::Pc) | bit(Category::Pd) | bit(Category::Ps) | bit(Category::Pe) |
                                    bit(Category::Pi) | bit(Category::Pf) | bit(Category::Po);
constexpr CategorySet symbols = bit(Category::Sm) | bit(Category::Sc) | bit(Category::Sk) | bit(Category::So);
constexpr CategorySet separators = bit(Category::Zs) | bit(Category::Zl) | bit(Category::Zp);
constexpr CategorySet others =
    bit(Category::Cc) | bit(Category::Cf) | bit(Category::Cs) | bit(Category::Co) | bit(Category::Cn);

constexpr std::string_view category_names[] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl",
                                               "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc",
                                               "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};

Category search_table(char32_t c) noexcept {
    auto const ranges = category_ranges();
    auto const after = std::upper_bound(ranges.begin(), ranges.end(), c,
                                        [](char32_t value, CategoryRange const& r) { return value < r.first; });
    return std::prev(after)->category;
}

// The categories of the Basic Multilingual Plane, looked up directly.
using PlaneTable = std::array<Category, first_astral>;

std::unique_ptr<PlaneTable> make_plane_table() {
    auto table = std::make_unique<PlaneTable>();
    auto const ranges = category_ranges();
    for (std::size_t i = 0; i < ranges.size() && ranges[i].first < first_astral; ++i) {
        char32_t const end = i + 1 < ranges.size() ? std::min(ranges[i + 1].first, first_astral) : first_astral;
        std::fill(table->begin() + ranges[i].first, table->begin() + end, ranges[i].category);
    }
    return table;
}

// Whether `c` continues a UTF-8 sequence.
bool is_continuation(unsigned char c) noexcept { return (c & 0xC0) == 0x80; }

// The code point the well-formed-enough sequence at utf8[at] encodes and its length; nothing when
// it is invalid. Like llama.cpp, overlong forms and surrogates are accepted (and re-encoded as the
// code points they spell); a value past U+10FFFF is not.
std::optional<std::pair<char32_t, std::size_t>> decode_one(std::string_view utf8, std::size_t at) noexcept {
    auto const byte = [&](std::size_t i) { return static_cast<unsigned char>(utf8[at + i]); };
    unsigned char const lead = byte(0);
    std::size_t length = 0;
    char32_t value = 0;
    if (lead < 0x80) return std::pair{char32_t{lead}, std::size_t{1}};
    if ((lead & 0xE0) == 0xC0) {
        length = 2, value = lead & 0x1Fu;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3, value = lead & 0x0Fu;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4, value = lead & 0x07u;
    } else {
        return std::nullopt;
    }
    if (at + length > utf8.size()) return std::nullopt;
    for (std::size_t i = 1; i < length; ++i) {
        if (!is_continuation(byte(i))) return std::nullopt;
        value = (value << 6) | (byte(i) & 0x3Fu);
    }
    if (value > last_code_point) return std::nullopt;
    return std::pair{value, length};
}

}  // namespace

std::optional<CategorySet> category_set(std::string_view property) noexcept {
    if (property == "L") return letters;
    if (property == "M") return marks;
    if (property == "N") return numbers;
    if (property == "P") return punctuation;
    if (property == "S") return symbols;
    if (property == "Z") return separators;
    if (property == "C") return others;
    for (std::size_t i = 0; i < std::size(category_names); ++i)
        if (category_names[i] == property) return bit(static_cast<Category>(i));
    return std::nullopt;
}

Category category(char32_t c) noexcept {
    static std::unique_ptr<PlaneTable> const plane = make_plane_table();
    if (c < first_astral) return (*plane)[c];
    if (c > last_code_point) return Category::Cn;
    return search_table(c);
}

bool is_whitespace(char32_t c) noexcept {
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
    switch (c) {
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000: return true;
        default: return c >= 0x2000 && c <= 0x200A;
    }
}

std::size_t sequence_length(char lead) noexcept {
    static constexpr std::size_t by_high_bits[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_bits[static_cast<unsigned char>(lead) >> 4];
}

std::u32string decode(std::string_view utf8) {
    std::u32string out;
    out.reserve(utf8.size());
    for (std::size_t at = 0; at < utf8.size();) {
        if (auto const one = decode_one(utf8, at)) {
            out.push_back(one->first);
            at += one->second;
        } else {
            out.push_back(replacement_character);
            ++at;
        }
    }
    return out;
}

void append(std::string& out, char32_t c) {
    auto const put = [&](unsigned value) { out.push_back(static_cast<char>(value)); };
    if (c < 0x80) {
        put(c);
    } else if (c < 0x800) {
        put(0xC0 | (c >> 6));
        put(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        put(0xE0 | (c >> 12));
        put(0x80 | ((c >> 6) & 0x3F));
        put(0x80 | (c & 0x3F));
    } else {
        put(0xF0 | (c >> 18));
        put(0x80 | ((c >> 12) & 0x3F));
        put(0x80 | ((c >> 6) & 0x3F));
        put(0x80 | (c & 0x3F));
    }
}

std::string encode(std::u32string_view code_points) {
    std::string out;
    out.reserve(code_points.size());
    for (char32_t c : code_points) append(out, c);
    return out;
}

}  // namespace rayo::llm::unicode
