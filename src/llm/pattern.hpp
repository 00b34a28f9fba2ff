// A regular expression over code points: the subset that tokenizers' pre-tokenizers are written
// in (Hugging Face tokenizers' Split patterns), matched with backtracking and the leftmost-first
// preference of Oniguruma, ECMAScript and Python, so that a pattern splits text as it does there.
//
//   Pattern words(R"( ?\p{L}+| ?\p{N}+|\s+(?!\S))");
//   std::size_t end = words.match(U"  hello", 1);   // 7: " hello"
//
// The syntax: literals (UTF-8), escaped punctuation (\$ \| ...), \r \n \t \f \v, classes
// [...] with ranges and negation, \s \S (Unicode White_Space), \p{..} \P{..} (general categories
// and their groups: L, Lu, N, P, ...), groups (...) and (?:...), alternation |, the greedy
// quantifiers ? * + {n} {n,} {n,m}, lookahead (?=...) (?!...) and $ (the end of the text).
// Anything else (\d, \b, ., ^, lazy quantifiers, (?i), back-references) is a rayo::Error naming it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/unicode.hpp"

namespace rayo::llm {

class Pattern {
public:
    static constexpr std::size_t no_match = static_cast<std::size_t>(-1);

    // Compiles `expression`; rayo::Error naming the expression and the place of what it cannot take.
    explicit Pattern(std::string_view expression);

    // Where the first match (in the pattern's order of preference) that starts at `at` ends, or
    // no_match. `text` is all the pattern sees: lookahead stops and $ matches at its end.
    [[nodiscard]] std::size_t match(std::u32string_view text, std::size_t at) const;

    [[nodiscard]] std::string const& expression() const noexcept { return expression_; }

    // A character class: ranges, categories and white space, possibly negated.
    struct CharClass {
        std::vector<std::pair<char32_t, char32_t>> ranges;
        unicode::CategorySet categories = 0, not_categories = 0;
        bool whitespace = false, not_whitespace = false, negated = false;
        [[nodiscard]] bool contains(char32_t c) const noexcept;
    };

    enum class Op : std::uint8_t {
        literal,      // one code point equal to `a`
        char_class,   // one code point in classes_[a]
        split,        // go on at `a`; if that fails, at `b`
        jump,         // go on at `a`
        end_of_text,  // $
        look_ahead,   // the program from here + 1 (ending in `match`) matches at this place; go on at `b`
        look_ahead_not,
        match,
    };
    struct Instruction {
        Op op;
        std::uint32_t a = 0, b = 0;
    };

private:
    [[nodiscard]] std::size_t run(std::size_t start_pc, std::u32string_view text, std::size_t at,
                                  std::vector<std::pair<std::uint32_t, std::size_t>>& stack) const;

    std::string expression_;
    std::vector<Instruction> program_;
    std::vector<CharClass> classes_;
};

}  // namespace rayo::llm
