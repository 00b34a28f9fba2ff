// GGUF reader: maps the file, validates every field against the file's size, then serves
// metadata, tensor descriptions and tensors loaded straight from the mapped bytes.
#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/cursor.hpp"
#include "rayo/gguf.hpp"

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader hands tensor bytes to the device as stored: it needs a little-endian host");

namespace rayo::gguf {

using detail::Cursor;

// ---- the mapping -----------------------------------------------------------------------------------

struct File::Mapping {
    void* address = nullptr;
    std::size_t size = 0;
    Mapping() = default;
    Mapping(Mapping const&) = delete;
    Mapping& operator=(Mapping const&) = delete;
    ~Mapping() {
        if (address) ::munmap(address, size);
    }
};

namespace {

struct FileDescriptor {
    int fd = -1;
    ~FileDescriptor() {
        if (fd >= 0) ::close(fd);
    }
};

[[noreturn]] void io_error(std::filesystem::path const& path, char const* what, int err) {
    throw Error("GGUF " + path.string() + ": " + what + ": " + std::strerror(err));
}

std::string hex32(std::uint32_t v) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 15u];
    return s;
}

// Smallest encoding of one value of each type, to bound counts by the bytes left before allocating.
constexpr std::array<std::size_t, 13> min_value_bytes{1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8};
constexpr std::uint32_t value_type_count = 13;

// Smallest metadata entry (empty key, one-byte value) and tensor description (empty name, no dims).
constexpr std::size_t min_kv_bytes = 8 + 4 + 1;
constexpr std::size_t min_tensor_info_bytes = 8 + 4 + 4 + 8;

bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
    out = a * b;
    return true;
}

// Ids ggml once used and then removed: named in the message, still refused.
std::string unknown_type(std::uint32_t id) {
    static constexpr std::pair<std::uint32_t, char const*> removed[] = {
        {4, "Q4_2"},      {5, "Q4_3"},        {31, "Q4_0_4_4"},   {32, "Q4_0_4_8"},
        {33, "Q4_0_8_8"}, {36, "IQ4_NL_4_4"}, {37, "IQ4_NL_4_8"}, {38, "IQ4_NL_8_8"}};
    std::string message = "unknown ggml type id " + std::to_string(id);
    for (auto const& [removed_id, name] : removed)
        if (removed_id == id) message += std::string(" (") + name + ", removed from ggml; not valid in GGUF files)";
    return message;
}

class Parser {
public:
    explicit Parser(Cursor& c) : c_(c) {}

    Value value(std::uint32_t type, std::size_t type_at, std::string const& field, std::size_t depth) {
        if (type >= value_type_count)
            c_.fail_at(type_at, field + ".type", Cursor::no_index,
                       "unknown value type " + std::to_string(type) + " (valid types are 0 to 12)");
        switch (static_cast<ValueType>(type)) {
            case ValueType::u8: return Value(std::in_place_type<std::uint8_t>, c_.read<std::uint8_t>(field));
            case ValueType::i8: return Value(std::in_place_type<std::int8_t>, c_.read<std::int8_t>(field));
            case ValueType::u16: return Value(std::in_place_type<std::uint16_t>, c_.read<std::uint16_t>(field));
            case ValueType::i16: return Value(std::in_place_type<std::int16_t>, c_.read<std::int16_t>(field));
            case ValueType::u32: return Value(std::in_place_type<std::uint32_t>, c_.read<std::uint32_t>(field));
            case ValueType::i32: return Value(std::in_place_type<std::int32_t>, c_.read<std::int32_t>(field));
            case ValueType::f32: return Value(std::in_place_type<float>, c_.read<float>(field));
            case ValueType::boolean: return Value(std::in_place_type<bool>, boolean(field, Cursor::no_index));
            case ValueType::string: return Value(std::in_place_type<std::string>, c_.read_string(field));
            case ValueType::array: return Value(std::in_place_type<Array>, array(field, depth + 1));
            case ValueType::u64: return Value(std::in_place_type<std::uint64_t>, c_.read<std::uint64_t>(field));
            case ValueType::i64: return Value(std::in_place_type<std::int64_t>, c_.read<std::int64_t>(field));
            case ValueType::f64: return Value(std::in_place_type<double>, c_.read<double>(field));
        }
        c_.fail_at(type_at, field + ".type", Cursor::no_index, "unknown value type " + std::to_string(type));
    }

private:
    bool boolean(std::string const& field, std::uint64_t index) {
        std::size_t const at = c_.offset();
        auto const b = c_.read<std::uint8_t>(field, index);
        if (b > 1) c_.fail_at(at, field, index, "bool value " + std::to_string(b) + " is neither 0 nor 1");
        return b != 0;
    }

    // An array's element type, count and elements; `depth` counts this array (1 for a top-level one).
    Array array(std::string const& field, std::size_t depth) {
        if (depth > max_array_depth)
            c_.fail(field, "arrays nested more than " + std::to_string(max_array_depth) + " deep");
        std::size_t const type_at = c_.offset();
        auto const type = c_.read<std::uint32_t>(field + ".element_type");
        if (type >= value_type_count)
            c_.fail_at(type_at, field + ".element_type", Cursor::no_index,
                       "unknown array element type " + std::to_string(type) + " (valid types are 0 to 12)");
        std::size_t const count_at = c_.offset();
        auto const count = c_.read<std::uint64_t>(field + ".count");
        std::size_t const min_bytes = min_value_bytes[type];
        if (count > c_.remaining() / min_bytes)
            c_.fail_at(count_at, field + ".count", Cursor::no_index,
                       std::to_string(count) + " elements of " + std::string(to_string(static_cast<ValueType>(type))) +
                           " need at least " + std::to_string(min_bytes) + " bytes each, but only " +
                           std::to_string(c_.remaining()) + " bytes are left in the file");
        Array out;
        switch (static_cast<ValueType>(type)) {
            case ValueType::u8: fill<0>(out, count, field, depth); break;
            case ValueType::i8: fill<1>(out, count, field, depth); break;
            case ValueType::u16: fill<2>(out, count, field, depth); break;
            case ValueType::i16: fill<3>(out, count, field, depth); break;
            case ValueType::u32: fill<4>(out, count, field, depth); break;
            case ValueType::i32: fill<5>(out, count, field, depth); break;
            case ValueType::f32: fill<6>(out, count, field, depth); break;
            case ValueType::boolean: fill<7>(out, count, field, depth); break;
            case ValueType::string: fill<8>(out, count, field, depth); break;
            case ValueType::array: fill<9>(out, count, field, depth); break;
            case ValueType::u64: fill<10>(out, count, field, depth); break;
            case ValueType::i64: fill<11>(out, count, field, depth); break;
            case ValueType::f64: fill<12>(out, count, field, depth); break;
        }
        return out;
    }

    template <std::size_t I>
    void fill(Array& out, std::uint64_t count, std::string const& field, std::size_t depth) {
        auto& items = out.items.emplace<I>();
        using E = typename std::decay_t<decltype(items)>::value_type;
        items.reserve(static_cast<std::size_t>(count));  // count <= bytes left / smallest element
        for (std::uint64_t i = 0; i < count; ++i) {
            if constexpr (std::is_same_v<E, bool>)
                items.push_back(boolean(field, i));
            else if constexpr (std::is_same_v<E, std::string>)
                items.emplace_back(c_.read_string(field, i));
            else if constexpr (std::is_same_v<E, Array>)
                items.push_back(array(field + "[" + std::to_string(i) + "]", depth + 1));
            else
                items.push_back(c_.read<E>(field, i));
        }
    }

    Cursor& c_;
};

}  // namespace

// ---- File ------------------------------------------------------------------------------------------

File::File() = default;
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(std::filesystem::path const& path) {
    FileDescriptor fd;
    // O_NONBLOCK: opening a FIFO or a device must not wait for a writer before the check below
    // refuses it (a regular file ignores the flag).
    fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd.fd < 0) io_error(path, "cannot open", errno);
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0) io_error(path, "cannot stat", errno);
    if (!S_ISREG(st.st_mode))
        throw Error("GGUF " + path.string() + ": not a regular file (" +
                    (S_ISDIR(st.st_mode)                          ? "a directory"
                     : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                     : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                                  : "not a file") +
                    ")");

    File file;
    file.source_ = path.string();
    file.mapping_ = std::make_unique<Mapping>();
    auto const size = static_cast<std::size_t>(st.st_size);
    if (size > 0) {
        void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
        if (address == MAP_FAILED) io_error(path, "cannot map", errno);
        file.mapping_->address = address;
        file.mapping_->size = size;
        file.bytes_ = {static_cast<std::byte const*>(address), size};
    }
    file.parse();
    return file;
}

File File::from_memory(std::span<std::byte const> bytes, std::string name) {
    File file;
    file.source_ = std::move(name);
    file.bytes_ = bytes;
    file.parse();
    return file;
}

// ---- parse stages ----------------------------------------------------------------------------------

namespace {

// The header's fields after the magic.
struct Header {
    std::uint32_t version = 0;
    std::uint64_t tensor_count = 0;
    std::uint64_t kv_count = 0;
};

// Refuses every version but 2 and 3, naming the likely cause.
void check_version(Cursor const& c, std::uint32_t version) {
    if (version != 2 && version != 3) {
        std::string problem;
        if (version == 1)
            problem = "GGUF version 1 is not supported (only versions 2 and 3)";
        else if (version == 0x02000000u || version == 0x03000000u)
            problem =
                "version field " + hex32(version) + " looks big-endian; only little-endian GGUF files are supported";
        else
            problem = "unsupported GGUF version " + std::to_string(version) + " (only versions 2 and 3)";
        c.fail_at(4, "header.version", Cursor::no_index, problem);
    }
}

// Reads the header; its counts are checked against the bytes left before anything is allocated.
Header read_header(Cursor& c) {
    auto const file_magic = c.read<std::uint32_t>("header.magic");
    if (file_magic != magic)
        c.fail_at(0, "header.magic", Cursor::no_index,
                  "not a GGUF file: expected \"GGUF\" (" + hex32(magic) + "), found " + hex32(file_magic));
    Header h;
    h.version = c.read<std::uint32_t>("header.version");
    check_version(c, h.version);
    std::size_t const tensor_count_at = c.offset();
    h.tensor_count = c.read<std::uint64_t>("header.tensor_count");
    std::size_t const kv_count_at = c.offset();
    h.kv_count = c.read<std::uint64_t>("header.metadata_kv_count");
    if (h.kv_count > c.remaining() / min_kv_bytes)
        c.fail_at(kv_count_at, "header.metadata_kv_count", Cursor::no_index,
                  std::to_string(h.kv_count) + " key/value pairs need at least " + std::to_string(min_kv_bytes) +
                      " bytes each, but only " + std::to_string(c.remaining()) + " bytes follow the header");
    std::size_t const after_kvs = c.remaining() - static_cast<std::size_t>(h.kv_count) * min_kv_bytes;
    if (h.tensor_count > after_kvs / min_tensor_info_bytes)
        c.fail_at(tensor_count_at, "header.tensor_count", Cursor::no_index,
                  std::to_string(h.tensor_count) + " tensor descriptions need at least " +
                      std::to_string(min_tensor_info_bytes) + " bytes each, but only " + std::to_string(after_kvs) +
                      " bytes are left after the smallest possible metadata");
    return h;
}

// Reads `kv_count` metadata entries into `metadata`. Returns the file offset of general.alignment's
// type field (0 when the file has none), which the messages about its value name.
std::size_t read_metadata(Cursor& c, std::uint64_t kv_count, Metadata& metadata) {
    Parser parser(c);
    std::size_t alignment_at = 0;
    for (std::uint64_t i = 0; i < kv_count; ++i) {
        std::size_t const key_at = c.offset();
        std::string key(c.read_string("metadata.key", i));
        if (metadata.contains(key)) c.fail_at(key_at, "metadata.key", i, "duplicate key \"" + printable(key) + "\"");
        std::string const field = "metadata \"" + printable(key) + "\"";
        std::size_t const type_at = c.offset();
        auto const type = c.read<std::uint32_t>(field + ".type");
        Value value = parser.value(type, type_at, field, 0);
        if (key == alignment_key) alignment_at = type_at;
        metadata.try_add(std::move(key), std::move(value));
    }
    return alignment_at;
}

// The alignment general.alignment sets, checked; `alignment` when the metadata has no such key.
std::uint32_t checked_alignment(Cursor const& c, Metadata const& metadata, std::size_t alignment_at,
                                std::uint32_t alignment) {
    if (Value const* a = metadata.find(alignment_key)) {
        // The type is checked before the value is used as a u32.
        auto const* al = std::get_if<std::uint32_t>(a);
        if (!al)
            c.fail_at(alignment_at, "metadata \"general.alignment\".type", Cursor::no_index,
                      "general.alignment has type " + std::string(to_string(type_of(*a))) + "; it must be u32");
        if (*al == 0 || !std::has_single_bit(*al) || *al > max_alignment)
            c.fail_at(alignment_at + 4, "metadata \"general.alignment\"", Cursor::no_index,
                      "general.alignment " + std::to_string(*al) + " is not a power of two between 1 and " +
                          std::to_string(max_alignment));
        alignment = *al;
    }
    return alignment;
}

// One tensor description's fields as read, with the file offsets the messages about them name.
struct TensorFields {
    std::string name;
    std::string field;  // "tensor \"name\"": what the messages call the description
    std::size_t n_dims_at = 0;
    std::uint32_t n_dims = 0;
    std::array<std::uint64_t, max_dims> ne{1, 1, 1, 1};
    std::array<std::size_t, max_dims> ne_at{};
    std::uint32_t type = 0;
    TypeInfo const* info = nullptr;
    std::size_t offset_at = 0;
    std::uint64_t offset = 0;
};

// Reads a tensor description's dimension count and its dimensions ne[0 .. n_dims).
void read_dims(Cursor& c, TensorFields& t) {
    t.n_dims_at = c.offset();
    t.n_dims = c.read<std::uint32_t>(t.field + ".n_dims");
    if (t.n_dims > max_dims)
        c.fail_at(t.n_dims_at, t.field + ".n_dims", Cursor::no_index,
                  std::to_string(t.n_dims) + " dimensions; at most " + std::to_string(max_dims) + " are allowed");
    for (std::uint32_t j = 0; j < t.n_dims; ++j) {
        t.ne_at[j] = c.offset();
        t.ne[j] = c.read<std::uint64_t>(t.field + ".dims", j);
        if (t.ne[j] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            c.fail_at(t.ne_at[j], t.field + ".dims", j,
                      "dimension " + std::to_string(t.ne[j]) + " does not fit in a signed 64-bit integer");
    }
}

// Reads tensor description `i`: its name (not one in `index` yet), dimensions, type and data offset.
TensorFields read_tensor_fields(Cursor& c, std::uint64_t i,
                                std::map<std::string, std::size_t, std::less<>> const& index, std::uint32_t alignment) {
    TensorFields t;
    std::size_t const name_at = c.offset();
    t.name = std::string(c.read_string("tensor.name", i));
    if (index.contains(t.name))
        c.fail_at(name_at, "tensor.name", i, "duplicate tensor name \"" + printable(t.name) + "\"");
    t.field = "tensor \"" + printable(t.name) + "\"";
    read_dims(c, t);
    std::size_t const type_at = c.offset();
    t.type = c.read<std::uint32_t>(t.field + ".type");
    t.info = type_info(t.type);
    if (!t.info) c.fail_at(type_at, t.field + ".type", Cursor::no_index, unknown_type(t.type));
    t.offset_at = c.offset();
    t.offset = c.read<std::uint64_t>(t.field + ".offset");
    if (t.offset % alignment != 0)
        c.fail_at(t.offset_at, t.field + ".offset", Cursor::no_index,
                  "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                      std::to_string(alignment));
    return t;
}

// The tensor's size in bytes, checked.
std::uint64_t tensor_bytes(Cursor const& c, TensorFields const& t) {
    TypeInfo const* info = t.info;
    // Sizes: ne[0] whole blocks, element count within what a Shape addresses, bytes without overflow.
    if (t.n_dims == 0 && info->block_values != 1)
        c.fail_at(t.n_dims_at, t.field + ".n_dims", Cursor::no_index,
                  "a " + std::string(info->name) + " tensor needs dimensions (blocks of " +
                      std::to_string(info->block_values) + " values along ne[0])");
    if (t.ne[0] % info->block_values != 0)
        c.fail_at(t.ne_at[0], t.field + ".dims", 0,
                  "ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " + std::string(info->name) +
                      " block size " + std::to_string(info->block_values));
    constexpr std::uint64_t numel_limit = std::numeric_limits<std::size_t>::max() / 16;  // as rayo::Shape
    std::uint64_t numel = 1;
    for (std::uint32_t j = t.n_dims; j-- > 0;) {  // rayo order: the outermost dimension first
        if (t.ne[j] != 0 && numel > numel_limit / t.ne[j])
            c.fail_at(t.ne_at[j], t.field + ".dims", j, "the element count overflows (more than 2^60 values)");
        numel *= t.ne[j];
    }
    std::uint64_t bytes = 0;
    if (!checked_mul(numel / info->block_values, info->block_bytes, bytes))
        c.fail_at(t.ne_at[0], t.field + ".dims", Cursor::no_index, "the byte size overflows");
    return bytes;
}

// The tensor's shape: its dimensions in rayo order, the outermost first (GGUF lists ne[0] first).
Shape tensor_shape(Cursor const& c, TensorFields const& t) {
    std::vector<std::int64_t> dims(t.n_dims);
    for (std::uint32_t j = 0; j < t.n_dims; ++j) dims[t.n_dims - 1 - j] = static_cast<std::int64_t>(t.ne[j]);
    Shape shape;
    try {
        shape = Shape(std::move(dims));
    } catch (ShapeError const& e) {
        c.fail_at(t.n_dims_at, t.field + ".dims", Cursor::no_index, e.what());
    }
    return shape;
}

// Checks where the tensors' data lie in the data section, which starts `data_offset` bytes into a
// file of `file_size` bytes; `offset_at[i]` is the file offset of tensor i's offset field.
void check_data_layout(Cursor const& c, std::vector<TensorInfo> const& tensors,
                       std::vector<std::size_t> const& offset_at, std::uint64_t data_offset, std::size_t file_size,
                       std::uint32_t alignment) {
    bool const section_in_file = data_offset <= file_size;
    std::uint64_t const data_size = section_in_file ? file_size - data_offset : 0;
    // Tensors lie one after another in the order they are declared, each at the running size of
    // the ones before it padded to the alignment, as ggml's loader requires: no two share bytes.
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        TensorInfo const& t = tensors[i];
        if (!section_in_file || t.offset > data_size || t.bytes > data_size - t.offset)
            c.fail_at(offset_at[i], "tensor \"" + printable(t.name) + "\".offset", Cursor::no_index,
                      std::to_string(t.bytes) + " bytes of data at data offset " + std::to_string(t.offset) +
                          " (file offset " + std::to_string(data_offset + t.offset) +
                          ") run past the end of the file (" + std::to_string(file_size) +
                          " bytes; the data section holds " + std::to_string(data_size) + ")");
        if (t.offset != expected)
            c.fail_at(offset_at[i], "tensor \"" + printable(t.name) + "\".offset", Cursor::no_index,
                      "data offset " + std::to_string(t.offset) + " is not where the tensors before it end (" +
                          std::to_string(expected) +
                          (i ? ", after \"" + printable(tensors[i - 1].name) + "\"" : std::string()) +
                          "): tensor data must follow the declaration order without gaps or overlaps" +
                          (t.offset < expected ? " (it overlaps an earlier tensor)" : ""));
        expected += (t.bytes + alignment - 1) / alignment * alignment;
    }
}

}  // namespace

void File::parse() {
    Cursor c(bytes_, source_);

    // Header.
    Header const header = read_header(c);
    version_ = header.version;

    // Metadata.
    std::size_t const alignment_at = read_metadata(c, header.kv_count, metadata_);
    alignment_ = checked_alignment(c, metadata_, alignment_at, alignment_);

    // Tensor descriptions.
    tensors_.reserve(static_cast<std::size_t>(header.tensor_count));  // bounded by the bytes left
    std::vector<std::size_t> offset_at;
    offset_at.reserve(static_cast<std::size_t>(header.tensor_count));
    for (std::uint64_t i = 0; i < header.tensor_count; ++i) {
        TensorFields t = read_tensor_fields(c, i, tensor_index_, alignment_);
        std::uint64_t const bytes = tensor_bytes(c, t);
        Shape shape = tensor_shape(c, t);
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(
            TensorInfo{std::move(t.name), std::move(shape), t.type, t.info->name, t.info->dtype, t.offset, bytes});
        offset_at.push_back(t.offset_at);
    }

    // Data section: at the next multiple of the alignment; every tensor must lie inside the file,
    // an empty one too (its offset is still a place in the file, which data() points at).
    std::uint64_t const end_of_infos = c.offset();
    data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
    check_data_layout(c, tensors_, offset_at, data_offset_, bytes_.size(), alignment_);
}

TensorInfo const* File::find(std::string_view name) const noexcept {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

TensorInfo const& File::tensor(std::string_view name) const {
    if (TensorInfo const* t = find(name)) return *t;
    throw Error("GGUF " + source_ + ": no tensor named \"" + printable(name) + "\" (the file has " +
                std::to_string(tensors_.size()) + " tensors)");
}

std::span<std::byte const> File::data(TensorInfo const& info) const {
    TensorInfo const& t = tensor(info.name);  // this file's own (validated) description
    if (t.bytes == 0) return {};
    return bytes_.subspan(static_cast<std::size_t>(data_offset_ + t.offset), static_cast<std::size_t>(t.bytes));
}

template <Element T>
Tensor<T> File::load(std::string_view name, Device device) const {
    return load<T>(name, device, ProgressCallback{});
}

template <Element T>
Tensor<T> File::load(std::string_view name, Device device, ProgressCallback const& progress) const {
    Tensor<T> tensor = Tensor<T>::empty(tensor_for<T>(name).shape, device);
    load_into(name, tensor, progress);
    return tensor;
}

template <Element T>
TensorInfo const& File::tensor_for(std::string_view name) const {
    TensorInfo const& t = tensor(name);
    if (!t.dtype) {
        std::string loadable;
        for (TypeInfo const& k : known_types())
            if (k.dtype) loadable += (loadable.empty() ? "" : ", ") + std::string(k.name);
        throw Unsupported("GGUF " + source_ + ": tensor \"" + printable(t.name) + "\" has type " +
                          std::string(t.type_name) + " (ggml type " + std::to_string(t.type) +
                          "), which rayo cannot load (it loads " + loadable + ")");
    }
    if (*t.dtype != dtype_of<T>)
        throw DTypeError("GGUF " + source_ + ": tensor \"" + printable(t.name) + "\" is stored as " +
                         std::string(t.type_name) + " (rayo " + std::string(to_string(*t.dtype)) + "), not " +
                         std::string(to_string(dtype_of<T>)) + ": load it as Tensor<" +
                         std::string(to_string(*t.dtype)) + ">");
    return t;
}

template <Element T>
void File::load_into(std::string_view name, Tensor<T> const& dst, ProgressCallback const& progress) const {
    TensorInfo const& t = tensor_for<T>(name);
    if (dst.shape() != t.shape)
        throw ShapeError("GGUF " + source_ + ": tensor \"" + printable(t.name) + "\" has shape " + t.shape.to_string() +
                         ", the tensor to load it into " + dst.shape().to_string());
    if (progress) progress(0, t.bytes);
    // In 32 pieces of at least 1 MiB when someone is watching; at once otherwise.
    std::uint64_t const piece =
        progress ? std::max<std::uint64_t>(std::uint64_t{1} << 20, (t.bytes + 31) / 32) : t.bytes;
    std::byte const* src = bytes_.data() + data_offset_ + t.offset;
    auto& storage = rayo::detail::TensorAccess::storage(dst);
    std::size_t const offset = rayo::detail::TensorAccess::offset(dst);
    for (std::uint64_t done = 0; done < t.bytes;) {
        std::uint64_t const n = std::min(piece, t.bytes - done);
        storage.upload(offset + static_cast<std::size_t>(done), src + done, static_cast<std::size_t>(n));
        done += n;
        if (progress) progress(done, t.bytes);
    }
}

template Tensor<float> File::load<float>(std::string_view, Device) const;
template Tensor<half> File::load<half>(std::string_view, Device) const;
template Tensor<bfloat16> File::load<bfloat16>(std::string_view, Device) const;
template Tensor<std::int32_t> File::load<std::int32_t>(std::string_view, Device) const;
template Tensor<std::int64_t> File::load<std::int64_t>(std::string_view, Device) const;
template Tensor<q4_k> File::load<q4_k>(std::string_view, Device) const;
template Tensor<q6_k> File::load<q6_k>(std::string_view, Device) const;
template Tensor<q8_0> File::load<q8_0>(std::string_view, Device) const;
template Tensor<q4_0> File::load<q4_0>(std::string_view, Device) const;
template Tensor<q5_k> File::load<q5_k>(std::string_view, Device) const;
template Tensor<q8_k> File::load<q8_k>(std::string_view, Device) const;
template Tensor<float> File::load<float>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<half> File::load<half>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<bfloat16> File::load<bfloat16>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<std::int32_t> File::load<std::int32_t>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<std::int64_t> File::load<std::int64_t>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<q4_k> File::load<q4_k>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<q6_k> File::load<q6_k>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<q8_0> File::load<q8_0>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<q4_0> File::load<q4_0>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<q5_k> File::load<q5_k>(std::string_view, Device, ProgressCallback const&) const;
template Tensor<q8_k> File::load<q8_k>(std::string_view, Device, ProgressCallback const&) const;

template void File::load_into<float>(std::string_view, Tensor<float> const&, ProgressCallback const&) const;
template void File::load_into<half>(std::string_view, Tensor<half> const&, ProgressCallback const&) const;
template void File::load_into<bfloat16>(std::string_view, Tensor<bfloat16> const&, ProgressCallback const&) const;
template void File::load_into<std::int32_t>(std::string_view, Tensor<std::int32_t> const&,
                                            ProgressCallback const&) const;
template void File::load_into<std::int64_t>(std::string_view, Tensor<std::int64_t> const&,
                                            ProgressCallback const&) const;
template void File::load_into<q4_k>(std::string_view, Tensor<q4_k> const&, ProgressCallback const&) const;
template void File::load_into<q6_k>(std::string_view, Tensor<q6_k> const&, ProgressCallback const&) const;
template void File::load_into<q8_0>(std::string_view, Tensor<q8_0> const&, ProgressCallback const&) const;
template void File::load_into<q4_0>(std::string_view, Tensor<q4_0> const&, ProgressCallback const&) const;
template void File::load_into<q5_k>(std::string_view, Tensor<q5_k> const&, ProgressCallback const&) const;
template void File::load_into<q8_k>(std::string_view, Tensor<q8_k> const&, ProgressCallback const&) const;

}  // namespace rayo::gguf
