// Metadata: ordered key/value pairs, typed access and printing.
#include <charconv>

#include "core/printable.hpp"
#include "gguf/cursor.hpp"
#include "rayo/gguf.hpp"

namespace rayo::gguf {

namespace detail {

void throw_missing_key(std::string_view key) { throw Error("GGUF metadata has no key \"" + printable(key) + "\""); }

void throw_value_type(std::string_view key, ValueType held, ValueType wanted, bool array_elements) {
    std::string what =
        key.empty() ? std::string("GGUF metadata array") : "GGUF metadata key \"" + printable(key) + "\"";
    if (array_elements)
        throw FormatError(what + " holds an array of " + std::string(to_string(held)) + ", not of " +
                          std::string(to_string(wanted)));
    throw FormatError(what + " holds a " + std::string(to_string(held)) + ", not a " + std::string(to_string(wanted)));
}

}  // namespace detail

void Metadata::set(std::string key, Value value) {
    if (auto it = index_.find(key); it != index_.end()) {
        entries_[it->second].value = std::move(value);
        return;
    }
    index_.emplace(key, entries_.size());
    entries_.push_back({std::move(key), std::move(value)});
}

bool Metadata::try_add(std::string key, Value value) {
    if (index_.contains(key)) return false;
    index_.emplace(key, entries_.size());
    entries_.push_back({std::move(key), std::move(value)});
    return true;
}

bool Metadata::erase(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
    index_.clear();
    for (std::size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].key, i);
    return true;
}

Value const* Metadata::find(std::string_view key) const noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].value;
}

std::string printable(std::string_view text, std::size_t max_chars) { return rayo::detail::printable(text, max_chars); }

namespace {

constexpr std::size_t max_string_chars = 160;

template <class F>
std::string shortest(F value) {
    char buf[64];
    auto const r = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, r.ptr);
}

std::string quoted(std::string const& s) {
    std::string out(1, '"');
    out += printable(s, max_string_chars);
    out += '"';
    if (out.size() > max_string_chars + 2) out += " (" + std::to_string(s.size()) + " bytes)";
    return out;
}

template <class T>
std::string scalar(T const& v) {
    if constexpr (std::is_same_v<T, bool>)
        return v ? "true" : "false";
    else if constexpr (std::is_same_v<T, std::string>)
        return quoted(v);
    else if constexpr (std::is_floating_point_v<T>)
        return shortest(v);
    else if constexpr (std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int8_t>)
        return std::to_string(static_cast<int>(v));
    else
        return std::to_string(v);
}

}  // namespace

std::string to_string(Array const& a, std::size_t max_items) {
    std::string out = std::string(to_string(a.type())) + "[" + std::to_string(a.size()) + "] {";
    std::visit(
        [&](auto const& items) {
            std::size_t const shown = std::min(items.size(), max_items);
            for (std::size_t i = 0; i < shown; ++i) {
                if (i) out += ", ";
                using E = typename std::decay_t<decltype(items)>::value_type;
                if constexpr (std::is_same_v<E, Array>)
                    out += to_string(items[i], max_items);
                else if constexpr (std::is_same_v<E, bool>)
                    out += items[i] ? "true" : "false";
                else
                    out += scalar(items[i]);
            }
            if (shown < items.size()) out += ", ...";
        },
        a.items);
    return out + "}";
}

std::string to_string(Value const& v, std::size_t max_items) {
    return std::visit(
        [&](auto const& x) -> std::string {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Array>)
                return to_string(x, max_items);
            else
                return scalar(x);
        },
        v);
}

}  // namespace rayo::gguf
