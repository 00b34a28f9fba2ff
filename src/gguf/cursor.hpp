// A bounds-checked little-endian reader over a byte span. Every read checks the bytes left first;
// a failure is a rayo::FormatError naming the source, the field and the byte offset.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "rayo/error.hpp"
#include "rayo/gguf.hpp"

namespace rayo::gguf::detail {

using gguf::printable;

class Cursor {
public:
    static constexpr std::uint64_t no_index = std::numeric_limits<std::uint64_t>::max();

    Cursor(std::span<std::byte const> data, std::string_view source) noexcept : data_(data), source_(source) {}

    [[nodiscard]] std::size_t offset() const noexcept { return pos_; }
    [[nodiscard]] std::size_t remaining() const noexcept { return data_.size() - pos_; }
    [[nodiscard]] std::size_t size() const noexcept { return data_.size(); }

    // An unsigned or signed integer, float or double, stored little-endian.
    template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) T
        read(std::string_view field, std::uint64_t index = no_index) {
        need(sizeof(T), field, index);
        using Bits =
            std::conditional_t<sizeof(T) == 1, std::uint8_t,
                               std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
        static_assert(sizeof(Bits) == sizeof(T));
        Bits bits = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i)
            bits |= static_cast<Bits>(static_cast<Bits>(std::to_integer<std::uint8_t>(data_[pos_ + i])) << (8 * i));
        pos_ += sizeof(T);
        return std::bit_cast<T>(bits);
    }

    // `n` bytes as a view into the data.
    std::string_view read_bytes(std::uint64_t n, std::string_view field, std::uint64_t index = no_index) {
        need(n, field, index);
        std::string_view const s(reinterpret_cast<char const*>(data_.data() + pos_), static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return s;
    }

    // A GGUF string: u64 length, then that many bytes. The length is checked against the bytes left
    // before anything is read or allocated.
    std::string_view read_string(std::string_view field, std::uint64_t index = no_index) {
        std::size_t const at = pos_;
        auto const n = read<std::uint64_t>(field, index);
        if (n > remaining())
            fail_at(at, field, index,
                    "string length " + std::to_string(n) + " exceeds the " + std::to_string(remaining()) +
                        " bytes left in the file");
        return read_bytes(n, field, index);
    }

    // Throws unless `n` more bytes are there.
    void need(std::uint64_t n, std::string_view field, std::uint64_t index = no_index) const {
        if (n > remaining())
            fail_at(pos_, field, index,
                    "truncated: needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
    }

    [[noreturn]] void fail(std::string_view field, std::string const& problem, std::uint64_t index = no_index) const {
        fail_at(pos_, field, index, problem);
    }
    [[noreturn]] void fail_at(std::size_t at, std::string_view field, std::uint64_t index,
                              std::string const& problem) const;

private:
    std::span<std::byte const> data_;
    std::string_view source_;
    std::size_t pos_ = 0;
};

// "GGUF <source>: <field>[<index>] at byte offset <at>: <problem>"
[[noreturn]] void format_error(std::string_view source, std::string_view field, std::uint64_t index, std::size_t at,
                               std::string const& problem);

}  // namespace rayo::gguf::detail
