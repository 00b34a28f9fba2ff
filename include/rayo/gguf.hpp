// GGUF files (versions 2 and 3): a validating, memory-mapped reader and a writer.
//
//   auto file = rayo::gguf::File::open("model.gguf");
//   auto arch = file.get<std::string>("general.architecture");
//   for (auto const& t : file.tensors()) std::cout << t.name << ' ' << t.shape.to_string() << ' ' << t.type_name <<
//   '\n'; rayo::Tensor<rayo::q4_k> w = file.load<rayo::q4_k>("blk.0.attn_q.weight", rayo::Device::best());
//
// open() checks the whole header, every metadata value and every tensor description against the
// file's size before anything is used: a malformed file gives rayo::FormatError naming the field and
// its byte offset, never a crash, an out-of-bounds read or an allocation larger than the file.
// Shapes are in rayo order (row-major): GGUF's ne[0], the fastest-varying dimension, comes last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "rayo/device.hpp"
#include "rayo/dtype.hpp"
#include "rayo/error.hpp"
#include "rayo/export.hpp"
#include "rayo/progress.hpp"
#include "rayo/quant.hpp"
#include "rayo/shape.hpp"
#include "rayo/tensor.hpp"

namespace rayo::gguf {

inline constexpr std::uint32_t magic = 0x46554747;        // "GGUF" read as a little-endian u32
inline constexpr std::uint32_t default_alignment = 32;    // when general.alignment is absent
inline constexpr std::uint32_t max_alignment = 1u << 20;  // larger general.alignment values are rejected
inline constexpr std::size_t max_dims = 4;                // dimensions per tensor
inline constexpr std::size_t max_array_depth = 8;         // arrays nested inside arrays, counting the outermost
inline constexpr std::string_view alignment_key = "general.alignment";

// ---- metadata values -----------------------------------------------------------------------------

// GGUF metadata value types; the numbers are the on-disk type ids.
enum class ValueType : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
RAYO_API std::string_view to_string(ValueType t) noexcept;

// An array value: its element type and elements. Arrays of arrays may mix element types.
// `items` holds the vector whose index is the element type's id (vector<Array> for nested arrays).
struct RAYO_API Array {
    using Items = std::variant<std::vector<std::uint8_t>, std::vector<std::int8_t>, std::vector<std::uint16_t>,
                               std::vector<std::int16_t>, std::vector<std::uint32_t>, std::vector<std::int32_t>,
                               std::vector<float>, std::vector<bool>, std::vector<std::string>, std::vector<Array>,
                               std::vector<std::uint64_t>, std::vector<std::int64_t>, std::vector<double>>;
    Items items;

    Array() = default;  // an empty array of u8
    template <class T>
    requires std::is_constructible_v<Items, std::vector<T>> Array(std::vector<T> values)
        : items(std::in_place_type<std::vector<T>>, std::move(values)) {}  // NOLINT

    [[nodiscard]] ValueType type() const noexcept { return static_cast<ValueType>(items.index()); }
    [[nodiscard]] std::size_t size() const noexcept {
        return std::visit([](auto const& v) { return v.size(); }, items);
    }
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    // The elements as vector<T>; FormatError naming both types when the elements are of another type.
    template <class T>
    [[nodiscard]] std::vector<T> const& get() const;

    friend bool operator==(Array const&, Array const&) = default;
};

// One metadata value. The variant's index is the GGUF type id (ValueType).
using Value = std::variant<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, float,
                           bool, std::string, Array, std::uint64_t, std::int64_t, double>;

[[nodiscard]] inline ValueType type_of(Value const& v) noexcept { return static_cast<ValueType>(v.index()); }

namespace detail {
// Index of T among a variant's alternatives (their count when absent).
template <class T, class... Ts>
constexpr std::size_t alternative_index(std::variant<Ts...> const*) noexcept {
    constexpr bool same[] = {std::is_same_v<T, Ts>...};
    for (std::size_t i = 0; i < sizeof...(Ts); ++i)
        if (same[i]) return i;
    return sizeof...(Ts);
}
}  // namespace detail

// The ValueType of a C++ type, and of the elements of an array stored as vector<T>.
template <class T>
concept ValueAlternative = detail::alternative_index<T>(static_cast<Value const*>(nullptr))
< std::variant_size_v<Value>;
template <ValueAlternative T>
inline constexpr ValueType value_type_of =
    static_cast<ValueType>(detail::alternative_index<T>(static_cast<Value const*>(nullptr)));
template <class T>
concept ArrayElement = detail::alternative_index<std::vector<T>>(static_cast<Array::Items const*>(nullptr))
< std::variant_size_v<Array::Items>;
template <ArrayElement T>
inline constexpr ValueType array_type_of =
    static_cast<ValueType>(detail::alternative_index<std::vector<T>>(static_cast<Array::Items const*>(nullptr)));

// Text from a file made safe to print: valid UTF-8 is kept; control characters, invalid bytes,
// quotes and backslashes are escaped (\x0a, \"); beyond max_chars bytes the text is cut with "...".
[[nodiscard]] RAYO_API std::string printable(std::string_view text, std::size_t max_chars = 80);

// Human-readable text: strings quoted, arrays as "[u32 × 3: 1, 2, 3]" with at most max_items shown.
[[nodiscard]] RAYO_API std::string to_string(Value const& v, std::size_t max_items = 8);
[[nodiscard]] RAYO_API std::string to_string(Array const& a, std::size_t max_items = 8);

namespace detail {
[[noreturn]] RAYO_API void throw_missing_key(std::string_view key);
// `key` empty for an array not reached through a key.
[[noreturn]] RAYO_API void throw_value_type(std::string_view key, ValueType held, ValueType wanted,
                                            bool array_elements);
}  // namespace detail

template <class T>
std::vector<T> const& Array::get() const {
    if (auto const* v = std::get_if<std::vector<T>>(&items)) return *v;
    detail::throw_value_type({}, type(), array_type_of<T>, true);
}

// Key/value metadata in file order. Lookups are by exact key.
class RAYO_API Metadata {
public:
    struct Entry {
        std::string key;
        Value value;
        friend bool operator==(Entry const&, Entry const&) = default;
    };

    // Adds `key`, or replaces its value keeping its position.
    void set(std::string key, Value value);
    template <ValueAlternative T>
    void set(std::string key, T value) {
        set(std::move(key), Value(std::in_place_type<T>, std::move(value)));
    }
    void set(std::string key, char const* value) { set(std::move(key), Value(std::in_place_type<std::string>, value)); }
    template <ArrayElement T>
    void set(std::string key, std::vector<T> values) {
        set(std::move(key), Value(std::in_place_type<Array>, Array(std::move(values))));
    }
    // Adds `key` unless it is present; false (and nothing changed) when it was.
    bool try_add(std::string key, Value value);
    bool erase(std::string_view key);

    [[nodiscard]] Value const* find(std::string_view key) const noexcept;
    [[nodiscard]] bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
    // The value of `key` as T: rayo::Error when the key is missing, FormatError naming both types when
    // it holds another type (no conversions: a u64 is not read as a u32).
    template <ValueAlternative T>
    [[nodiscard]] T const& get(std::string_view key) const {
        Value const* v = find(key);
        if (!v) detail::throw_missing_key(key);
        if (auto const* p = std::get_if<T>(v)) return *p;
        detail::throw_value_type(key, type_of(*v), value_type_of<T>, false);
    }
    // An array of T elements.
    template <ArrayElement T>
    [[nodiscard]] std::vector<T> const& get_array(std::string_view key) const {
        Array const& a = get<Array>(key);
        if (auto const* p = std::get_if<std::vector<T>>(&a.items)) return *p;
        detail::throw_value_type(key, a.type(), array_type_of<T>, true);
    }
    // `fallback` when the key is missing; a key of another type is still a FormatError.
    template <ValueAlternative T>
    [[nodiscard]] T get_or(std::string_view key, T fallback) const {
        return contains(key) ? get<T>(key) : fallback;
    }

    [[nodiscard]] std::span<Entry const> entries() const noexcept { return entries_; }
    [[nodiscard]] auto begin() const noexcept { return entries_.begin(); }
    [[nodiscard]] auto end() const noexcept { return entries_.end(); }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
    [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
    friend bool operator==(Metadata const& a, Metadata const& b) { return a.entries_ == b.entries_; }

private:
    std::vector<Entry> entries_;
    std::map<std::string, std::size_t, std::less<>> index_;
};

// ---- tensor types ----------------------------------------------------------------------------------

// A ggml tensor type: `block_values` values stored in `block_bytes` bytes.
struct RAYO_API TypeInfo {
    std::uint32_t id;
    std::string_view name;  // "F32", "Q4_K", ...
    std::uint32_t block_values;
    std::uint32_t block_bytes;
    std::optional<DType> dtype;  // the rayo element type, when rayo loads this type
};
// nullptr for ids ggml does not define (or no longer stores in GGUF files).
[[nodiscard]] RAYO_API TypeInfo const* type_info(std::uint32_t ggml_type) noexcept;
// The ggml type id rayo writes for a dtype.
[[nodiscard]] RAYO_API std::uint32_t type_id(DType t) noexcept;
// Every type known, in id order.
[[nodiscard]] RAYO_API std::span<TypeInfo const> known_types() noexcept;

// ---- reading -----------------------------------------------------------------------------------------

struct RAYO_API TensorInfo {
    std::string name;
    Shape shape;                 // rayo order: GGUF's dims reversed
    std::uint32_t type = 0;      // ggml type id
    std::string_view type_name;  // "Q4_K"
    std::optional<DType> dtype;  // set when rayo can load this type
    std::uint64_t offset = 0;    // from the start of the data section
    std::uint64_t bytes = 0;
};

class RAYO_API File {
public:
    // Maps the file read-only and validates it. rayo::Error when it cannot be opened or mapped.
    // The file must not be truncated by others while it is mapped (that raises SIGBUS, as with any mapping).
    static File open(std::filesystem::path const& path);
    // Parses bytes in memory without copying them; they must outlive the File. `name` is used in messages.
    static File from_memory(std::span<std::byte const> bytes, std::string name = "<memory>");

    File(File&&) noexcept;
    File& operator=(File&&) noexcept;
    File(File const&) = delete;
    File& operator=(File const&) = delete;
    ~File();  // unmaps

    [[nodiscard]] std::uint32_t version() const noexcept { return version_; }
    [[nodiscard]] std::uint32_t alignment() const noexcept { return alignment_; }
    // Byte offset of the data section in the file.
    [[nodiscard]] std::uint64_t data_offset() const noexcept { return data_offset_; }
    // The path, or the name given to from_memory.
    [[nodiscard]] std::string const& source() const noexcept { return source_; }
    // The whole file.
    [[nodiscard]] std::span<std::byte const> bytes() const noexcept { return bytes_; }

    [[nodiscard]] Metadata const& metadata() const noexcept { return metadata_; }
    template <ValueAlternative T>
    [[nodiscard]] T const& get(std::string_view key) const {
        return metadata_.get<T>(key);
    }

    [[nodiscard]] std::span<TensorInfo const> tensors() const noexcept { return tensors_; }
    [[nodiscard]] TensorInfo const* find(std::string_view name) const noexcept;
    // rayo::Error naming the file when there is no such tensor.
    [[nodiscard]] TensorInfo const& tensor(std::string_view name) const;
    // The tensor's stored bytes, inside the mapping.
    [[nodiscard]] std::span<std::byte const> data(TensorInfo const& info) const;

    // A new tensor on `device` filled straight from the mapped bytes. rayo::Error when the name is
    // unknown, rayo::Unsupported when rayo cannot hold the stored type (naming it), DTypeError
    // naming both types when T is not the stored type.
    template <Element T>
    [[nodiscard]] Tensor<T> load(std::string_view name, Device device = Device::cpu()) const;
    // The same, reporting progress in bytes copied (rayo/progress.hpp).
    template <Element T>
    [[nodiscard]] Tensor<T> load(std::string_view name, Device device, ProgressCallback const& progress) const;
    // The tensor's bytes copied into `dst`, a tensor of the stored shape on any device: a view into
    // a larger tensor too, such as rows of a weight that joins several stored ones
    // (w.slice(0, 4096) of a fused q/k/v projection). The errors of load(), and ShapeError naming
    // both shapes when dst's differs; dst is untouched on every error.
    template <Element T>
    void load_into(std::string_view name, Tensor<T> const& dst, ProgressCallback const& progress = {}) const;

private:
    File();
    struct Mapping;
    void parse();
    // The tensor's entry, checked to be loadable as T.
    template <Element T>
    [[nodiscard]] TensorInfo const& tensor_for(std::string_view name) const;

    std::unique_ptr<Mapping> mapping_;
    std::span<std::byte const> bytes_;
    std::string source_;
    std::uint32_t version_ = 0;
    std::uint32_t alignment_ = default_alignment;
    std::uint64_t data_offset_ = 0;
    Metadata metadata_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

// ---- writing -----------------------------------------------------------------------------------------

// A tensor to write: a rayo Tensor (read when write() runs), or raw bytes of any known ggml type.
class RAYO_API TensorToWrite {
public:
    template <Element T>
    TensorToWrite(std::string name, Tensor<T> const& tensor);
    // `bytes` (not copied: keep them alive until written) hold a tensor of ggml type `ggml_type` and
    // `shape` (rayo order); FormatError when the type is unknown or the sizes disagree.
    static TensorToWrite raw(std::string name, std::uint32_t ggml_type, Shape shape, std::span<std::byte const> bytes);

    [[nodiscard]] std::string const& name() const noexcept { return name_; }
    [[nodiscard]] std::uint32_t type() const noexcept { return type_; }
    [[nodiscard]] Shape const& shape() const noexcept { return shape_; }
    [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
    // Copies the tensor's bytes into `out` (of bytes() bytes).
    void read(std::span<std::byte> out) const { read_(out); }

private:
    TensorToWrite(std::string name, std::uint32_t type, Shape shape, std::uint64_t bytes,
                  std::function<void(std::span<std::byte>)> read);
    std::string name_;
    std::uint32_t type_;
    Shape shape_;
    std::uint64_t bytes_;
    std::function<void(std::span<std::byte>)> read_;
};

// Writes a GGUF v3 file: the metadata in order, then the tensors, each at a multiple of
// general.alignment (a u32 power of two up to max_alignment; 32 when absent) and padded to it.
// FormatError for invalid input (duplicate tensor names, a bad general.alignment, more than 4 dims);
// rayo::Error when the file cannot be written.
RAYO_API void write(std::filesystem::path const& path, Metadata const& metadata,
                    std::span<TensorToWrite const> tensors);
RAYO_API void write(std::filesystem::path const& path, Metadata const& metadata,
                    std::initializer_list<TensorToWrite> tensors);
// The same bytes, in memory.
[[nodiscard]] RAYO_API std::vector<std::byte> write_to_memory(Metadata const& metadata,
                                                              std::span<TensorToWrite const> tensors);

}  // namespace rayo::gguf
