// GGUF writer: v3, metadata in order, tensors aligned to general.alignment and padded to it.
#include <algorithm>
#include <fstream>

#include "gguf/cursor.hpp"
#include "rayo/gguf.hpp"

namespace rayo::gguf {

namespace {

std::uint64_t align_up(std::uint64_t v, std::uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

// Bytes of a tensor of `type` and `shape`; FormatError when ne[0] is not whole blocks or rank > 4.
std::uint64_t tensor_bytes(std::string const& name, TypeInfo const& type, Shape const& shape) {
    if (shape.rank() > max_dims)
        throw FormatError("GGUF write: tensor \"" + printable(name) + "\" of shape " + shape.to_string() +
                          " has more than " + std::to_string(max_dims) + " dimensions");
    std::uint64_t const ne0 = shape.rank() ? static_cast<std::uint64_t>(shape[shape.rank() - 1]) : 1;
    if (ne0 % type.block_values != 0)
        throw FormatError("GGUF write: tensor \"" + printable(name) + "\" of shape " + shape.to_string() +
                          ": the last dimension is not a multiple of the " + std::string(type.name) + " block size " +
                          std::to_string(type.block_values));
    return shape.numel() / type.block_values * type.block_bytes;
}

std::uint32_t checked_alignment(Metadata const& metadata) {
    Value const* v = metadata.find(alignment_key);
    if (!v) return default_alignment;
    auto const* a = std::get_if<std::uint32_t>(v);
    if (!a)
        throw FormatError("GGUF write: general.alignment must be a u32, not a " + std::string(to_string(type_of(*v))));
    if (*a == 0 || (*a & (*a - 1)) != 0 || *a > max_alignment)
        throw FormatError("GGUF write: general.alignment " + std::to_string(*a) +
                          " is not a power of two between 1 and " + std::to_string(max_alignment));
    return *a;
}

void check_depth(Array const& a, std::string_view key, std::size_t depth) {
    if (depth > max_array_depth)
        throw FormatError("GGUF write: metadata \"" + printable(key) + "\" nests arrays more than " +
                          std::to_string(max_array_depth) + " deep");
    if (auto const* nested = std::get_if<std::vector<Array>>(&a.items))
        for (Array const& inner : *nested) check_depth(inner, key, depth + 1);
}

class Encoder {
public:
    explicit Encoder(std::function<void(std::byte const*, std::size_t)> put) : put_(std::move(put)) {}

    template <class T>
    void scalar(T v) {
        using Bits =
            std::conditional_t<sizeof(T) == 1, std::uint8_t,
                               std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
        auto const bits = std::bit_cast<Bits>(v);
        std::byte b[sizeof(T)];
        for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<std::byte>((bits >> (8 * i)) & 0xffu);
        bytes(b, sizeof(T));
    }
    void string(std::string_view s) {
        scalar<std::uint64_t>(s.size());
        bytes(reinterpret_cast<std::byte const*>(s.data()), s.size());
    }
    void value(Value const& v) {
        std::visit(
            [&](auto const& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, Array>)
                    array(x);
                else
                    element(x);
            },
            v);
    }
    void array(Array const& a) {
        scalar<std::uint32_t>(static_cast<std::uint32_t>(a.type()));
        scalar<std::uint64_t>(a.size());
        std::visit(
            [&](auto const& items) {
                if constexpr (std::is_same_v<std::decay_t<decltype(items)>, std::vector<bool>>) {
                    for (bool item : items) element(item);
                } else {
                    for (auto const& item : items) element(item);
                }
            },
            a.items);
    }
    void padding(std::uint64_t n) {
        static constexpr std::byte zeros[256] = {};
        while (n) {
            auto const k = static_cast<std::size_t>(std::min<std::uint64_t>(n, sizeof zeros));
            bytes(zeros, k);
            n -= k;
        }
    }
    void bytes(std::byte const* p, std::size_t n) {
        if (n) put_(p, n);
        written_ += n;
    }
    [[nodiscard]] std::uint64_t written() const noexcept { return written_; }

private:
    template <class T>
    void element(T const& x) {
        if constexpr (std::is_same_v<T, Array>)
            array(x);
        else if constexpr (std::is_same_v<T, std::string>)
            string(x);
        else if constexpr (std::is_same_v<T, bool>)
            scalar<std::uint8_t>(x ? 1 : 0);
        else
            scalar<T>(x);
    }

    std::function<void(std::byte const*, std::size_t)> put_;
    std::uint64_t written_ = 0;
};

void check(Metadata const& metadata, std::span<TensorToWrite const> tensors) {
    checked_alignment(metadata);
    for (auto const& e : metadata)
        if (auto const* a = std::get_if<Array>(&e.value)) check_depth(*a, e.key, 1);
    std::map<std::string_view, std::size_t> names;
    for (auto const& t : tensors)
        if (!names.emplace(t.name(), 0).second)
            throw FormatError("GGUF write: duplicate tensor name \"" + printable(t.name()) + "\"");
}

void emit(Metadata const& metadata, std::span<TensorToWrite const> tensors,
          std::function<void(std::byte const*, std::size_t)> put) {
    std::uint32_t const alignment = checked_alignment(metadata);
    Encoder out(std::move(put));
    out.scalar<std::uint32_t>(magic);
    out.scalar<std::uint32_t>(3);
    out.scalar<std::uint64_t>(tensors.size());
    out.scalar<std::uint64_t>(metadata.size());
    for (auto const& e : metadata) {
        out.string(e.key);
        out.scalar<std::uint32_t>(static_cast<std::uint32_t>(type_of(e.value)));
        out.value(e.value);
    }
    std::uint64_t offset = 0;
    for (auto const& t : tensors) {
        out.string(t.name());
        auto const rank = static_cast<std::uint32_t>(t.shape().rank());
        out.scalar<std::uint32_t>(rank);
        for (std::uint32_t j = rank; j-- > 0;) out.scalar<std::uint64_t>(static_cast<std::uint64_t>(t.shape()[j]));
        out.scalar<std::uint32_t>(t.type());
        offset = align_up(offset, alignment);
        out.scalar<std::uint64_t>(offset);
        offset += t.bytes();
    }
    out.padding(align_up(out.written(), alignment) - out.written());
    std::vector<std::byte> buffer;
    for (auto const& t : tensors) {
        buffer.resize(static_cast<std::size_t>(t.bytes()));
        t.read(buffer);
        out.bytes(buffer.data(), buffer.size());
        out.padding(align_up(t.bytes(), alignment) - t.bytes());
    }
}

}  // namespace

TensorToWrite::TensorToWrite(std::string name, std::uint32_t type, Shape shape, std::uint64_t bytes,
                             std::function<void(std::span<std::byte>)> read)
    : name_(std::move(name)), type_(type), shape_(std::move(shape)), bytes_(bytes), read_(std::move(read)) {}

template <Element T>
TensorToWrite::TensorToWrite(std::string name, Tensor<T> const& tensor)
    : TensorToWrite(std::move(name), type_id(dtype_of<T>), tensor.shape(), tensor.bytes(),
                    [tensor](std::span<std::byte> out) {
                        if (out.empty()) return;
                        rayo::detail::TensorAccess::storage(tensor).download(rayo::detail::TensorAccess::offset(tensor),
                                                                             out.data(), out.size());
                    }) {
    tensor_bytes(name_, *type_info(type_), shape_);  // rank and block checks
}

template TensorToWrite::TensorToWrite(std::string, Tensor<float> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<half> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<bfloat16> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<std::int32_t> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<std::int64_t> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<q4_k> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<q6_k> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<q8_0> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<q4_0> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<q5_k> const&);
template TensorToWrite::TensorToWrite(std::string, Tensor<q8_k> const&);

TensorToWrite TensorToWrite::raw(std::string name, std::uint32_t ggml_type, Shape shape,
                                 std::span<std::byte const> bytes) {
    TypeInfo const* info = type_info(ggml_type);
    if (!info)
        throw FormatError("GGUF write: tensor \"" + printable(name) + "\": unknown ggml type id " +
                          std::to_string(ggml_type));
    std::uint64_t const size = tensor_bytes(name, *info, shape);
    if (size != bytes.size())
        throw FormatError("GGUF write: tensor \"" + printable(name) + "\" (" + std::string(info->name) + ", shape " +
                          shape.to_string() + ") takes " + std::to_string(size) + " bytes, but " +
                          std::to_string(bytes.size()) + " were given");
    return TensorToWrite(std::move(name), ggml_type, std::move(shape), size,
                         [bytes](std::span<std::byte> out) { std::copy(bytes.begin(), bytes.end(), out.begin()); });
}

std::vector<std::byte> write_to_memory(Metadata const& metadata, std::span<TensorToWrite const> tensors) {
    check(metadata, tensors);
    std::vector<std::byte> out;
    emit(metadata, tensors, [&](std::byte const* p, std::size_t n) { out.insert(out.end(), p, p + n); });
    return out;
}

void write(std::filesystem::path const& path, Metadata const& metadata, std::span<TensorToWrite const> tensors) {
    check(metadata, tensors);
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    if (!file) throw Error("GGUF write: cannot create " + path.string());
    emit(metadata, tensors, [&](std::byte const* p, std::size_t n) {
        file.write(reinterpret_cast<char const*>(p), static_cast<std::streamsize>(n));
        if (!file) throw Error("GGUF write: writing " + path.string() + " failed");
    });
    file.close();
    if (!file) throw Error("GGUF write: writing " + path.string() + " failed");
}

void write(std::filesystem::path const& path, Metadata const& metadata, std::initializer_list<TensorToWrite> tensors) {
    write(path, metadata, std::span<TensorToWrite const>(tensors.begin(), tensors.size()));
}

}  // namespace rayo::gguf
