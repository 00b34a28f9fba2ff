#include "core/printable.hpp"

namespace rayo::detail {

namespace {

// Length of the valid UTF-8 sequence at text[i] that is not a control character, or 0.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
    auto const at = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
    auto const cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return at(k) >= lo && at(k) <= hi; };
    unsigned const c = at(0);
    if (c >= 0x20 && c < 0x7f) return 1;
    if (c == 0xc2) return cont(1, 0xa0) ? 2 : 0;  // U+0080..U+009F are C1 control characters
    if (c >= 0xc3 && c <= 0xdf) return cont(1) ? 2 : 0;
    if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
    if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;  // no surrogates
    if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
    return 0;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_chars) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        if (out.size() >= max_chars) {
            out += "...";
            break;
        }
        auto const c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (std::size_t const n = utf8_sequence(text, i)) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
            ++i;
        }
    }
    return out;
}

}  // namespace rayo::detail
