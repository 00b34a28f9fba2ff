// Unicode for rayo::llm's tokenizers: UTF-8 to code points and back, general categories and
// white space (the character classes \p{L}, \p{N}, \s, ... of the pre-tokenizers' patterns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rayo::llm::unicode {

// The replacement character, which stands for each byte of invalid UTF-8.
inline constexpr char32_t replacement_character = 0xFFFD;
inline constexpr char32_t last_code_point = 0x10FFFF;

// The Unicode general categories. The order is the generated table's (scripts/generate_unicode_tables.py).
enum class Category : std::uint8_t {
    Lu,
    Ll,
    Lt,
    Lm,
    Lo,  // letters
    Mn,
    Mc,
    Me,  // marks
    Nd,
    Nl,
    No,  // numbers
    Pc,
    Pd,
    Ps,
    Pe,
    Pi,
    Pf,
    Po,  // punctuation
    Sm,
    Sc,
    Sk,
    So,  // symbols
    Zs,
    Zl,
    Zp,  // separators
    Cc,
    Cf,
    Cs,
    Co,
    Cn,  // others: control, format, surrogate, private use, unassigned
};

// A set of categories, one bit per Category.
using CategorySet = std::uint32_t;
[[nodiscard]] constexpr CategorySet bit(Category c) noexcept { return CategorySet{1} << static_cast<unsigned>(c); }

// The set a property name of \p{...} stands for: a category ("Lu") or a group of them ("L", "N",
// "P", "S", "M", "Z", "C"); nothing for other names.
[[nodiscard]] std::optional<CategorySet> category_set(std::string_view property) noexcept;

// One entry of the category table: `category` holds from `first` up to the next entry's first.
struct CategoryRange {
    char32_t first;
    Category category;
};
// The table, sorted by first, starting at 0 (unicode_tables.cpp, generated).
[[nodiscard]] std::span<CategoryRange const> category_ranges() noexcept;
// The Unicode version of the table ("14.0.0").
[[nodiscard]] std::string_view unicode_version() noexcept;

// The general category of c; Cn past the last code point.
[[nodiscard]] Category category(char32_t c) noexcept;
// Whether c has Unicode's White_Space property (what \s matches).
[[nodiscard]] bool is_whitespace(char32_t c) noexcept;

// The length of the UTF-8 sequence that `lead` starts, from its high bits alone (1 for a
// continuation byte or an invalid lead), as SentencePiece splits text into characters.
[[nodiscard]] std::size_t sequence_length(char lead) noexcept;

// The code points of UTF-8 text. Each byte that does not start a well-formed sequence (a stray
// continuation byte, a truncated sequence, a value past U+10FFFF) becomes U+FFFD.
[[nodiscard]] std::u32string decode(std::string_view utf8);
// Appends the UTF-8 bytes of c (which must be at most U+10FFFF).
void append(std::string& out, char32_t c);
[[nodiscard]] std::string encode(std::u32string_view code_points);

}  // namespace rayo::llm::unicode
