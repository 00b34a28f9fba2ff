// Tensor shapes: dimensions in elements, validated on construction.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "rayo/error.hpp"
#include "rayo/export.hpp"

namespace rayo {

// One dimension; converts from any integer type so `{m, k}` works with int and size_t alike.
// Values that do not fit in int64 are kept as an out-of-range marker and rejected by Shape.
class RAYO_API Dim {
public:
    template <std::integral I>
    constexpr Dim(I value) noexcept  // NOLINT: implicit by design
        : value_(fits(value) ? static_cast<std::int64_t>(value) : overflow) {}

    [[nodiscard]] constexpr std::int64_t value() const noexcept { return value_; }
    [[nodiscard]] constexpr bool overflowed() const noexcept { return value_ == overflow; }

private:
    static constexpr std::int64_t overflow = std::numeric_limits<std::int64_t>::min();
    template <std::integral I>
    static constexpr bool fits(I v) noexcept {
        if constexpr (std::is_signed_v<I>)
            return static_cast<long long>(v) != overflow;
        else
            return static_cast<unsigned long long>(v) <=
                   static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max());
    }
    std::int64_t value_;
};

class RAYO_API Shape {
public:
    Shape() = default;  // a scalar: rank 0, one element
    Shape(std::initializer_list<Dim> dims) { assign(dims.begin(), dims.end()); }
    explicit Shape(std::span<std::int64_t const> dims) {
        for (auto d : dims) dims_.push_back(d);
        validate();
    }
    explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) { validate(); }

    [[nodiscard]] std::size_t rank() const noexcept { return dims_.size(); }
    [[nodiscard]] std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
    [[nodiscard]] std::span<std::int64_t const> dims() const noexcept { return dims_; }
    [[nodiscard]] std::size_t numel() const noexcept { return numel_; }
    [[nodiscard]] bool empty() const noexcept { return numel_ == 0; }
    // dimension i counted from the end for negative i; throws ShapeError when out of range
    [[nodiscard]] std::size_t axis(int i) const;

    [[nodiscard]] std::string to_string() const;
    friend bool operator==(Shape const& a, Shape const& b) noexcept { return a.dims_ == b.dims_; }

private:
    template <class It>
    void assign(It first, It last) {
        bool overflowed = false;
        for (; first != last; ++first) {
            overflowed = overflowed || first->overflowed();
            dims_.push_back(first->value());
        }
        if (overflowed) throw ShapeError("shape dimension does not fit in a 64-bit signed integer");
        validate();
    }
    void validate();

    std::vector<std::int64_t> dims_;
    std::size_t numel_ = 1;
};

inline std::string to_string(Shape const& s) { return s.to_string(); }

}  // namespace rayo
