// A structure-aware mutation of GGUF files for libFuzzer's custom mutator: the input is parsed and
// one thing a loader reads is changed — a metadata number set to an edge value or to another type,
// a string or a token's text replaced, a key or a tensor dropped, two tensors' names swapped, a
// tensor's dimensions permuted — and the file is written again. Byte mutations rarely keep a file
// parseable while changing what it means; these do. Inputs that do not parse are left to libFuzzer.
#pragma once

#include <rayo/gguf.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace rayo::fuzz {

class GgufMutator {
public:
    explicit GgufMutator(unsigned seed) : rng_(seed) {}

    // The mutated file, or nothing when the input does not parse or the change made no valid file.
    std::optional<std::vector<std::byte>> mutate(std::span<std::byte const> input) {
        try {
            gguf::File const file = gguf::File::from_memory(input, "mutator");
            gguf::Metadata metadata = file.metadata();
            std::vector<Stored> tensors;
            for (gguf::TensorInfo const& t : file.tensors()) tensors.push_back({t.name, t.type, t.shape, file.data(t)});
            bool const changed = pick(3) == 0 ? change_tensors(tensors) : change_metadata(metadata);
            if (!changed) return std::nullopt;
            std::vector<gguf::TensorToWrite> out;
            for (Stored const& t : tensors) out.push_back(gguf::TensorToWrite::raw(t.name, t.type, t.shape, t.bytes));
            return gguf::write_to_memory(metadata, out);
        } catch (rayo::Error const&) {
            return std::nullopt;
        }
    }

private:
    struct Stored {
        std::string name;
        std::uint32_t type;
        Shape shape;
        std::span<std::byte const> bytes;
    };

    std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

    template <class T, std::size_t N>
    T const& one_of(T const (&items)[N]) {
        return items[pick(N)];
    }

    std::uint64_t edge_integer(std::uint64_t old) {
        constexpr std::uint64_t edges[] = {0,
                                           1,
                                           2,
                                           3,
                                           4,
                                           8,
                                           16,
                                           32,
                                           64,
                                           256,
                                           0x7fffffff,
                                           0x80000000,
                                           0xffffffff,
                                           std::uint64_t{1} << 40,
                                           std::uint64_t{1} << 63,
                                           ~std::uint64_t{0}};
        switch (pick(6)) {
            case 0: return old + 1;
            case 1: return old - 1;
            case 2: return old * 2;
            case 3: return old / 2;
            default: return one_of(edges);
        }
    }

    template <class F>
    F edge_real(F old) {
        constexpr F edges[] = {F(0),
                               -F(0),
                               F(-1),
                               F(1e-30),
                               F(1e30),
                               std::numeric_limits<F>::max(),
                               std::numeric_limits<F>::denorm_min(),
                               std::numeric_limits<F>::infinity(),
                               -std::numeric_limits<F>::infinity(),
                               std::numeric_limits<F>::quiet_NaN()};
        switch (pick(4)) {
            case 0: return -old;
            case 1: return old * F(2);
            default: return one_of(edges);
        }
    }

    std::string piece() {
        static char const* const parts[] = {"\xc4\xa0", "\xc4\x8a", "\xc5\x84", "\xc3", "\xc3(",    "\xe2\x96\x81",
                                            "<0x0A>",   "<0xZZ>",   "<0x",      "a",    "\x1b[31m", ""};
        std::string s;
        for (std::size_t n = 1 + pick(3); n > 0; --n) s += one_of(parts);
        return s;
    }

    gguf::Value changed(gguf::Value const& v) {
        if (pick(8) == 0) {  // another type altogether
            gguf::Value const others[] = {gguf::Value(std::int32_t{-1}),
                                          gguf::Value(std::uint64_t{16}),
                                          gguf::Value(1.5f),
                                          gguf::Value(2.0),
                                          gguf::Value(true),
                                          gguf::Value(std::string("16"))};
            return one_of(others);
        }
        return std::visit(
            [&](auto const& x) -> gguf::Value {
                using X = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<X, bool>)
                    return !x;
                else if constexpr (std::is_integral_v<X>)
                    return static_cast<X>(edge_integer(static_cast<std::uint64_t>(x)));
                else if constexpr (std::is_floating_point_v<X>)
                    return edge_real(x);
                else if constexpr (std::is_same_v<X, std::string>) {
                    static char const* const names[] = {"llama", "gpt2", "", "mistral"};
                    return pick(2) == 0 ? std::string(one_of(names)) : piece();
                } else {
                    return changed(x);
                }
            },
            v);
    }

    // A token's text replaced, or the array cut to half its length.
    gguf::Value changed(gguf::Array const& a) {
        if (auto const* strings = std::get_if<std::vector<std::string>>(&a.items);
            strings && !strings->empty() && pick(4) != 0) {
            std::vector<std::string> s = *strings;
            s[pick(s.size())] = piece();
            return gguf::Array(std::move(s));
        }
        return std::visit(
            [](auto const& items) -> gguf::Value {
                auto cut = items;
                cut.resize(items.size() / 2);
                return gguf::Array(std::move(cut));
            },
            a.items);
    }

    bool change_metadata(gguf::Metadata& md) {
        if (md.empty()) return false;
        gguf::Metadata::Entry const entry = md.entries()[pick(md.size())];
        if (pick(8) == 0) return md.erase(entry.key);
        md.set(entry.key, changed(entry.value));
        return true;
    }

    bool change_tensors(std::vector<Stored>& tensors) {
        if (tensors.empty()) return false;
        Stored& t = tensors[pick(tensors.size())];
        switch (pick(4)) {
            case 0: {
                Stored& u = tensors[pick(tensors.size())];
                std::swap(t.name, u.name);
                return true;
            }
            case 1: {
                std::vector<std::int64_t> dims(t.shape.dims().rbegin(), t.shape.dims().rend());
                t.shape = Shape(std::move(dims));
                return true;
            }
            case 2: t.shape = Shape{t.shape.numel()}; return true;
            default: tensors.erase(tensors.begin() + static_cast<std::ptrdiff_t>(&t - tensors.data())); return true;
        }
    }

    std::minstd_rand rng_;
};

}  // namespace rayo::fuzz
