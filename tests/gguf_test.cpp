// GGUF reader and writer: round trips of every value and tensor type, and one test per kind of
// malformed file (each a FormatError naming the field and its byte offset, never a crash).
#include "support/gguf_samples.hpp"
#include "support/test_support.hpp"

#include <rayo/gguf.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <random>

#include <sys/stat.h>

// ---- allocation tracking: proves a lying length is refused before anything that size is allocated --
namespace {
std::atomic<std::size_t> largest_allocation{0};
thread_local bool tracking_allocations = false;
}  // namespace

// GCC 12 takes the free() below for a mismatch with operator new wherever both inline into one
// caller, although this operator new allocates with malloc.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
    if (tracking_allocations && n > largest_allocation.load(std::memory_order_relaxed))
        largest_allocation.store(n, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace rayo::test {
namespace {

namespace samples = gguf_samples;
using gguf::File;

struct AllocationScope {
    AllocationScope() {
        largest_allocation = 0;
        tracking_allocations = true;
    }
    ~AllocationScope() { tracking_allocations = false; }
    [[nodiscard]] std::size_t largest() const { return largest_allocation.load(); }
};

// A directory under the system temp dir, removed with everything in it.
class TempDir {
public:
    TempDir() {
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() /
                ("rayo-gguf-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    [[nodiscard]] std::filesystem::path operator/(std::string const& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

using samples::Bytes;

File parse(std::vector<std::byte> const& bytes) { return File::from_memory(bytes, "test.gguf"); }

// Parsing fails with a FormatError whose message names `field` and `at` (and `detail` when given).
void expect_format_error(std::vector<std::byte> const& bytes, std::string const& field, std::size_t at,
                         std::string const& detail = {}) {
    try {
        (void)parse(bytes);
        ADD_FAILURE() << "no FormatError; expected one naming " << field << " at byte offset " << at;
    } catch (FormatError const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find("test.gguf"), std::string::npos) << what;
        EXPECT_NE(what.find(field), std::string::npos) << "field '" << field << "' missing from: " << what;
        EXPECT_NE(what.find("byte offset " + std::to_string(at) + ":"), std::string::npos)
            << "offset " << at << " missing from: " << what;
        if (!detail.empty()) {
            EXPECT_NE(what.find(detail), std::string::npos) << "'" << detail << "' missing from: " << what;
        }
    }
}

std::vector<std::byte> tensor_bytes(gguf::TensorToWrite const& t) {
    std::vector<std::byte> out(static_cast<std::size_t>(t.bytes()));
    t.read(out);
    return out;
}

template <class T>
std::vector<std::byte> loaded_bytes(File const& f, std::string const& name) {
    auto const host = f.load<T>(name).to_vector();
    std::vector<std::byte> out(host.size() * sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), host.data(), out.size());
    return out;
}

// Loads a tensor as its own type and returns its bytes.
std::vector<std::byte> load_any(File const& f, gguf::TensorInfo const& t) {
    switch (*t.dtype) {
        case DType::f32: return loaded_bytes<float>(f, t.name);
        case DType::f16: return loaded_bytes<half>(f, t.name);
        case DType::bf16: return loaded_bytes<bfloat16>(f, t.name);
        case DType::i32: return loaded_bytes<std::int32_t>(f, t.name);
        case DType::i64: return loaded_bytes<std::int64_t>(f, t.name);
        case DType::q4_k: return loaded_bytes<q4_k>(f, t.name);
        case DType::q6_k: return loaded_bytes<q6_k>(f, t.name);
        case DType::q8_k: return loaded_bytes<q8_k>(f, t.name);
        case DType::q8_0: return loaded_bytes<q8_0>(f, t.name);
        case DType::q4_0: return loaded_bytes<q4_0>(f, t.name);
        case DType::q5_k: return loaded_bytes<q5_k>(f, t.name);
    }
    return {};
}

// ---- round trips -------------------------------------------------------------------------------------

TEST(Gguf, RoundTripsEveryValueTypeAndEveryLoadableTensorType) {
    TempDir dir;
    auto const metadata = samples::every_type_metadata(64);
    auto const tensors = samples::every_type_tensors();
    auto const path = dir / "every_type.gguf";
    gguf::write(path, metadata, tensors);

    File const file = File::open(path);
    EXPECT_EQ(file.version(), 3u);
    EXPECT_EQ(file.alignment(), 64u);
    EXPECT_EQ(file.data_offset() % 64, 0u);
    EXPECT_EQ(file.source(), path.string());
    EXPECT_TRUE(file.metadata() == metadata);
    ASSERT_EQ(file.metadata().size(), metadata.size());
    for (std::size_t i = 0; i < metadata.size(); ++i) {
        EXPECT_EQ(file.metadata().entries()[i].key, metadata.entries()[i].key);
        EXPECT_TRUE(file.metadata().entries()[i].value == metadata.entries()[i].value) << metadata.entries()[i].key;
    }

    ASSERT_EQ(file.tensors().size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        gguf::TensorInfo const& info = file.tensors()[i];
        SCOPED_TRACE(info.name);
        EXPECT_EQ(info.name, tensors[i].name());
        EXPECT_EQ(info.shape, tensors[i].shape());
        EXPECT_EQ(info.type, tensors[i].type());
        EXPECT_EQ(info.type_name, gguf::type_info(tensors[i].type())->name);
        EXPECT_EQ(info.bytes, tensors[i].bytes());
        EXPECT_EQ(info.offset % 64, 0u);
        ASSERT_TRUE(info.dtype.has_value());
        auto const want = tensor_bytes(tensors[i]);
        auto const raw = file.data(info);
        EXPECT_TRUE(std::equal(raw.begin(), raw.end(), want.begin(), want.end()));
        EXPECT_EQ(load_any(file, info), want);
        EXPECT_EQ(file.find(info.name), &info);
    }
    EXPECT_EQ(file.find("no.such.tensor"), nullptr);

    // The same bytes in memory; the typed getters.
    std::ifstream in(path, std::ios::binary);
    std::vector<char> on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto const in_memory = gguf::write_to_memory(metadata, tensors);
    ASSERT_EQ(on_disk.size(), in_memory.size());
    EXPECT_EQ(std::memcmp(on_disk.data(), in_memory.data(), in_memory.size()), 0);
    EXPECT_EQ(file.get<std::string>("general.architecture"), "rayo-test");
    EXPECT_EQ(file.get<std::uint32_t>("test.u32"), 4000000000u);
    EXPECT_EQ(file.get<std::string>("test.string.empty"), "");
    EXPECT_EQ(file.metadata().get_array<std::string>("test.array.string"),
              (std::vector<std::string>{"a", "", "three"}));
    EXPECT_EQ(file.metadata().get_or<std::int32_t>("missing", 7), 7);
    auto const& nested = file.get<gguf::Array>("test.array.nested");
    EXPECT_EQ(nested.type(), gguf::ValueType::array);
    EXPECT_EQ(nested.get<gguf::Array>()[2].get<gguf::Array>()[0].get<bool>(), std::vector<bool>{true});
}

// Loading with a progress callback: the same tensor, reported in bytes from 0 to all of them.
TEST(Gguf, LoadReportsProgressInBytes) {
    auto const values = random_floats(3 << 20, fresh_seed());  // 12 MiB: several 1 MiB pieces
    auto const t = Tensor<float>::from(std::span<float const>(values), Shape{3, 1 << 20});
    gguf::TensorToWrite const w[] = {gguf::TensorToWrite("w", t)};
    auto const bytes = gguf::write_to_memory(gguf::Metadata{}, w);
    File const file = parse(bytes);
    for (Device device : Device::all()) {
        SCOPED_TRACE(device.id());
        std::vector<std::uint64_t> done;
        auto const loaded = file.load<float>("w", device, [&](std::uint64_t d, std::uint64_t total) {
            EXPECT_EQ(total, values.size() * sizeof(float));
            done.push_back(d);
        });
        EXPECT_EQ(loaded.to_vector(), values);
        ASSERT_GE(done.size(), 3u);
        EXPECT_EQ(done.front(), 0u);
        EXPECT_EQ(done.back(), values.size() * sizeof(float));
        EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
    }
}

TEST(Gguf, ScalarAndEmptyTensorsAndDefaultAlignment) {
    std::vector<gguf::TensorToWrite> t;
    t.emplace_back("scalar", Tensor<float>::from(std::vector<float>{4.25f}, Shape{}));
    t.emplace_back("empty", Tensor<half>::from(std::vector<half>{}, Shape{3, 0}));
    auto const bytes = gguf::write_to_memory(gguf::Metadata{}, t);
    File const f = parse(bytes);
    EXPECT_EQ(f.alignment(), gguf::default_alignment);
    EXPECT_EQ(f.tensor("scalar").shape, Shape{});
    EXPECT_EQ(f.load<float>("scalar").item(), 4.25f);
    EXPECT_EQ(f.load<half>("empty").shape(), (Shape{3, 0}));
}

TEST(Gguf, DeepestAllowedArrayNestingRoundTrips) {
    gguf::Metadata md;
    md.set("deep", samples::nested_array(gguf::max_array_depth));
    EXPECT_TRUE(parse(gguf::write_to_memory(md, {})).metadata() == md);
    gguf::Metadata too_deep;
    too_deep.set("deep", samples::nested_array(gguf::max_array_depth + 1));
    EXPECT_THROW((void)gguf::write_to_memory(too_deep, {}), FormatError);
}

TEST(Gguf, FileIsMovableAndKeepsItsMapping) {
    TempDir dir;
    auto const path = dir / "small.gguf";
    auto const bytes = samples::small_file();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<char const*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    File a = File::open(path);
    File b = std::move(a);
    File c = File::open(path);
    c = std::move(b);
    EXPECT_EQ(c.load<float>("b").to_vector(), samples::values<float>(8, 12));
    EXPECT_EQ(c.get<std::string>("general.architecture"), "tiny");
}

TEST(Gguf, OpenReportsMissingFilesAndDirectories) {
    TempDir dir;
    EXPECT_THROW((void)File::open(dir / "missing.gguf"), Error);
    std::filesystem::create_directories(dir / "subdir");
    EXPECT_THROW((void)File::open(dir / "subdir"), Error);
    std::ofstream(dir / "empty.gguf").close();
    try {
        (void)File::open(dir / "empty.gguf");
        ADD_FAILURE() << "an empty file opened";
    } catch (FormatError const& e) {
        EXPECT_NE(std::string(e.what()).find("header.magic"), std::string::npos) << e.what();
    }
}

// ---- typed access and loading ------------------------------------------------------------------------

TEST(Gguf, GettersCheckTheStoredType) {
    File const f = parse(gguf::write_to_memory(samples::every_type_metadata(), {}));
    try {
        (void)f.get<std::uint32_t>("no.such.key");
        ADD_FAILURE();
    } catch (FormatError const&) {
        ADD_FAILURE() << "a missing key is not a format error";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("no.such.key"), std::string::npos) << e.what();
    }
    try {
        (void)f.get<std::uint32_t>("test.u64");
        ADD_FAILURE();
    } catch (FormatError const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find("test.u64"), std::string::npos) << what;
        EXPECT_NE(what.find("u64"), std::string::npos) << what;
        EXPECT_NE(what.find("u32"), std::string::npos) << what;
    }
    EXPECT_THROW((void)f.metadata().get_array<std::uint32_t>("test.array.string"), FormatError);
    EXPECT_THROW((void)f.metadata().get_array<std::uint32_t>("test.u32"), FormatError);
    EXPECT_THROW((void)f.metadata().get_or<std::string>("test.u32", "x"), FormatError);
    EXPECT_EQ(gguf::to_string(*f.metadata().find("test.array.u32"), 3), "u32[10] {7, 8, 9, ...}");
    EXPECT_EQ(gguf::to_string(*f.metadata().find("test.string")), "\"hello, gguf\"");
}

// load_into fills rows of a larger tensor (how a fused projection joins stored weights) and
// leaves the rest, and the destination on every error, as it was.
TEST(Gguf, LoadIntoFillsAViewAndChecksItsShape) {
    auto const a = random_floats(3 * 5, fresh_seed()), b = random_floats(2 * 5, fresh_seed());
    gguf::TensorToWrite const w[] = {
        gguf::TensorToWrite("a", Tensor<float>::from(std::span<float const>(a), Shape{3, 5})),
        gguf::TensorToWrite("b", Tensor<float>::from(std::span<float const>(b), Shape{2, 5}))};
    auto const bytes = gguf::write_to_memory(gguf::Metadata{}, w);  // parse() reads them in place
    File const file = parse(bytes);
    for (Device device : Device::all()) {
        SCOPED_TRACE(device.id());
        auto const joined = Tensor<float>::full(Shape{7, 5}, -1.0f, device);
        file.load_into("b", joined.slice(0, 2));
        file.load_into<float>("a", joined.slice(3, 6));
        std::vector<float> want(b);
        want.insert(want.end(), 5, -1.0f);
        want.insert(want.end(), a.begin(), a.end());
        want.insert(want.end(), 5, -1.0f);
        EXPECT_EQ(joined.to_vector(), want);
        EXPECT_THROW(file.load_into("a", joined.slice(0, 2)), ShapeError);
        EXPECT_THROW(file.load_into("a", joined.slice(0, 3).reshape({5, 3})), ShapeError);
        EXPECT_THROW(file.load_into("a", Tensor<half>::zeros(Shape{3, 5}, device)), DTypeError);
        EXPECT_THROW(file.load_into("c", joined.slice(0, 3)), Error);
        EXPECT_EQ(joined.to_vector(), want);
    }
}

TEST(Gguf, LoadWithTheWrongTypeIsADTypeErrorNamingBoth) {
    File const f = parse(gguf::write_to_memory(gguf::Metadata{}, samples::every_type_tensors()));
    try {
        (void)f.load<half>("f32.matrix");
        ADD_FAILURE();
    } catch (DTypeError const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find("F32"), std::string::npos) << what;
        EXPECT_NE(what.find("f16"), std::string::npos) << what;
    }
    EXPECT_THROW((void)f.load<float>("q4_k.weight"), DTypeError);
    EXPECT_THROW((void)f.load<q6_k>("q4_k.weight"), DTypeError);
    EXPECT_THROW((void)f.load<q4_k>("q8_k.weight"), DTypeError);
    EXPECT_THROW((void)f.load<bfloat16>("f16.matrix"), DTypeError);
    EXPECT_THROW((void)f.load<float>("missing"), Error);
}

TEST(Gguf, KnownButUnloadableTypesAreListedAndRaiseUnsupported) {
    auto const files = samples::corpus();
    auto const it =
        std::find_if(files.begin(), files.end(), [](auto const& p) { return p.first == "unsupported_types.gguf"; });
    ASSERT_NE(it, files.end());
    File const f = parse(it->second);
    ASSERT_EQ(f.tensors().size(), 5u);
    EXPECT_EQ(f.tensor("q4_1").type_name, "Q4_1");
    EXPECT_EQ(f.tensor("q4_1").bytes, 40u);
    EXPECT_EQ(f.tensor("f64").shape, (Shape{3, 1}));
    EXPECT_FALSE(f.tensor("q2_k").dtype.has_value());
    try {
        (void)f.load<float>("q4_1");
        ADD_FAILURE();
    } catch (Unsupported const& e) {
        EXPECT_NE(std::string(e.what()).find("Q4_1"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)f.load<float>("f64"), Unsupported);
}

// The fuzzer's seed corpus: every file parses except the crafted ones the reader must refuse.
TEST(Gguf, SeedCorpusFilesParseOrAreRefusedAsCrafted) {
    for (auto const& [name, bytes] : samples::corpus()) {
        bool const crafted = name == "shared_tensor_data.gguf" || name == "tensors_out_of_order.gguf";
        SCOPED_TRACE(name);
        if (crafted)
            EXPECT_THROW((void)parse(bytes), FormatError);
        else
            EXPECT_NO_THROW((void)parse(bytes));
    }
}

// ---- malformed files: header -------------------------------------------------------------------------

TEST(GgufMalformed, WrongMagic) {
    auto bytes = samples::small_file();
    bytes[3] = std::byte{'X'};
    expect_format_error(bytes, "header.magic", 0, "not a GGUF file");
}

TEST(GgufMalformed, UnsupportedVersions) {
    expect_format_error(Bytes().header(0, 0, 1).data, "header.version", 4, "version 1 is not supported");
    expect_format_error(Bytes().header(0, 0, 4).data, "header.version", 4, "unsupported GGUF version 4");
    expect_format_error(Bytes().header(0, 0, 0x03000000).data, "header.version", 4, "big-endian");
    EXPECT_EQ(parse(Bytes().header(0, 0, 2).data).version(), 2u);
}

TEST(GgufMalformed, TruncatedHeader) {
    auto const full = Bytes().header(0, 0).data;
    expect_format_error({full.begin(), full.begin() + 2}, "header.magic", 0, "truncated");
    expect_format_error({full.begin(), full.begin() + 6}, "header.version", 4, "truncated");
    expect_format_error({full.begin(), full.begin() + 10}, "header.tensor_count", 8, "truncated");
    expect_format_error({full.begin(), full.begin() + 23}, "header.metadata_kv_count", 16, "truncated");
}

TEST(GgufMalformed, CountsLargerThanTheFile) {
    expect_format_error(Bytes().header(0, std::uint64_t{1} << 62).zeros(100).data, "header.metadata_kv_count", 16);
    expect_format_error(Bytes().header(0, ~std::uint64_t{0}).data, "header.metadata_kv_count", 16);
    expect_format_error(Bytes().header(std::uint64_t{1} << 60, 0).zeros(100).data, "header.tensor_count", 8);
    expect_format_error(Bytes().header(5, 0).zeros(5 * 24 - 1).data, "header.tensor_count", 8);
    // Each count alone fits, both together do not.
    expect_format_error(Bytes().header(1, 2).zeros(2 * 13 + 23).data, "header.tensor_count", 8);
}

// ---- malformed files: metadata -------------------------------------------------------------------------

TEST(GgufMalformed, StringLengthBeyondTheFileAllocatesNothing) {
    Bytes b;
    b.header(0, 2).kv_u32("a", 1);
    std::size_t const key_at = b.size();
    b.u64(std::uint64_t{1} << 30).zeros(100);  // a 1 GiB key in a ~160-byte file
    ASSERT_LT(b.size(), 200u);
    AllocationScope scope;
    expect_format_error(b.data, "metadata.key[1]", key_at, "string length 1073741824");
    EXPECT_LT(scope.largest(), 4096u);

    Bytes v;
    v.header(0, 1).str("key").u32(8);
    std::size_t const value_at = v.size();
    v.u64(~std::uint64_t{0}).zeros(10);
    AllocationScope scope2;
    expect_format_error(v.data, "metadata \"key\"", value_at, "exceeds");
    EXPECT_LT(scope2.largest(), 4096u);
}

TEST(GgufMalformed, ArrayCountBeyondTheFileAllocatesNothing) {
    for (std::uint32_t type : {0u, 6u, 7u, 8u, 9u, 12u}) {
        Bytes b;
        b.header(0, 1).str("arr").u32(9).u32(type);
        std::size_t const count_at = b.size();
        b.u64(std::uint64_t{1} << 60).zeros(120);
        AllocationScope scope;
        expect_format_error(b.data, "metadata \"arr\".count", count_at, "only 120 bytes");
        EXPECT_LT(scope.largest(), 4096u) << "element type " << type;
    }
    // count * element size overflows 64 bits.
    Bytes b;
    b.header(0, 1).str("arr").u32(9).u32(10);
    std::size_t const count_at = b.size();
    b.u64((std::uint64_t{1} << 61) + 1).zeros(16);
    expect_format_error(b.data, "metadata \"arr\".count", count_at);
}

TEST(GgufMalformed, ArrayElementsRunPastTheEnd) {
    Bytes b;
    b.header(0, 1).str("arr").u32(9).u32(8).u64(2).str("ok");
    std::size_t const second_at = b.size();
    b.u64(50).zeros(9);  // fits the count bound (2 strings >= 16 bytes), not the data
    expect_format_error(b.data, "metadata \"arr\"[1]", second_at, "string length 50");
}

TEST(GgufMalformed, UnknownValueAndElementTypes) {
    Bytes b;
    b.header(0, 1).str("k");
    std::size_t const type_at = b.size();
    b.u32(13).zeros(8);
    expect_format_error(b.data, "metadata \"k\".type", type_at, "unknown value type 13");

    Bytes a;
    a.header(0, 1).str("k").u32(9);
    std::size_t const element_at = a.size();
    a.u32(0xffffffffu).u64(0);
    expect_format_error(a.data, "metadata \"k\".element_type", element_at, "unknown array element type 4294967295");
}

TEST(GgufMalformed, BoolThatIsNeitherZeroNorOne) {
    Bytes b;
    b.header(0, 1).str("flag").u32(7);
    std::size_t const at = b.size();
    b.u8(2);
    expect_format_error(b.data, "metadata \"flag\"", at, "bool value 2");
}

TEST(GgufMalformed, ArraysNestedTooDeep) {
    Bytes b;
    b.header(0, 1).str("deep").u32(9);
    for (std::size_t i = 0; i < gguf::max_array_depth; ++i) b.u32(9).u64(1);
    std::size_t const ninth_at = b.size();
    b.u32(0).u64(0);
    expect_format_error(b.data, "metadata \"deep\"[0][0][0][0][0][0][0]", ninth_at, "nested more than 8 deep");

    // A long chain of nested arrays is refused at depth 9 without deep recursion.
    Bytes chain;
    chain.header(0, 1).str("chain").u32(9);
    for (int i = 0; i < 100000; ++i) chain.u32(9).u64(1);
    EXPECT_THROW((void)parse(chain.data), FormatError);
}

TEST(GgufMalformed, DuplicateKeys) {
    Bytes b;
    b.header(0, 3).kv_u32("a", 1).kv_u32("b", 2);
    std::size_t const dup_at = b.size();
    b.kv_u32("a", 3);
    expect_format_error(b.data, "metadata.key[2]", dup_at, "duplicate key \"a\"");
}

TEST(GgufMalformed, BadAlignment) {
    for (std::uint32_t bad : {0u, 3u, 48u, 2u << 20, 0x80000000u}) {
        Bytes b;
        b.header(0, 1).str("general.alignment").u32(4);
        std::size_t const value_at = b.size();
        b.u32(bad);
        expect_format_error(b.data, "general.alignment", value_at, "not a power of two");
    }
    Bytes ok;
    ok.header(0, 1).kv_u32("general.alignment", 1u << 20);
    EXPECT_EQ(parse(ok.data).alignment(), 1u << 20);

    // The wrong type: a u64 alignment is refused before it is read as a u32.
    Bytes wrong;
    wrong.header(0, 1).str("general.alignment");
    std::size_t const type_at = wrong.size();
    wrong.u32(10).u64(32);
    expect_format_error(wrong.data, "general.alignment", type_at, "must be u32");
    Bytes text;
    text.header(0, 1).str("general.alignment");
    std::size_t const text_type_at = text.size();
    text.u32(8).str("32");
    expect_format_error(text.data, "general.alignment", text_type_at, "has type string");

    gguf::Metadata md;
    md.set("general.alignment", std::uint32_t{24});
    EXPECT_THROW((void)gguf::write_to_memory(md, {}), FormatError);
    md.set("general.alignment", std::uint64_t{32});
    EXPECT_THROW((void)gguf::write_to_memory(md, {}), FormatError);
}

// ---- malformed files: tensor descriptions ------------------------------------------------------------

TEST(GgufMalformed, TooManyDimensions) {
    Bytes b;
    b.header(1, 0).str("t");
    std::size_t const at = b.size();
    b.u32(5).zeros(5 * 8 + 4 + 8 + 32);
    expect_format_error(b.data, "tensor \"t\".n_dims", at, "5 dimensions");
}

TEST(GgufMalformed, NoDimensionsForABlockType) {
    Bytes b;
    b.header(1, 0).str("t");
    std::size_t const at = b.size();
    b.u32(0).u32(12).u64(0).zeros(200);
    expect_format_error(b.data, "tensor \"t\".n_dims", at, "Q4_K");
}

TEST(GgufMalformed, DimensionProductOverflows) {
    // Checked outermost first (rayo order): ne[2]·ne[1] = 2^50 fits, times ne[0] = 2^70 does not.
    Bytes b;
    b.header(1, 0).str("t").u32(3);
    std::size_t const ne0_at = b.size();
    b.u64(std::uint64_t{1} << 20).u64(std::uint64_t{1} << 20).u64(std::uint64_t{1} << 30).u32(0).u64(0).zeros(64);
    expect_format_error(b.data, "tensor \"t\".dims[0]", ne0_at, "overflows");

    Bytes huge;
    huge.header(1, 0).str("t").u32(1);
    std::size_t const dim_at = huge.size();
    huge.u64(~std::uint64_t{0}).u32(0).u64(0).zeros(64);
    expect_format_error(huge.data, "tensor \"t\".dims[0]", dim_at, "does not fit");

    // A zero dimension makes the tensor empty.
    Bytes zero;
    zero.header(1, 0).tensor("t", {std::uint64_t{1} << 40, 0}, 0, 0).zeros(64);
    EXPECT_EQ(parse(zero.data).tensor("t").bytes, 0u);
    EXPECT_EQ(parse(zero.data).tensor("t").shape, (Shape{0, std::int64_t{1} << 40}));
}

TEST(GgufMalformed, BlockTypeRowNotWholeBlocks) {
    Bytes b;
    b.header(1, 0).str("t").u32(2);
    std::size_t const ne0_at = b.size();
    b.u64(100).u64(2).u32(14).u64(0).zeros(500);
    expect_format_error(b.data, "tensor \"t\".dims[0]", ne0_at, "block size 256");
}

TEST(GgufMalformed, UnknownTensorType) {
    for (std::uint32_t id : {4u, 31u, 40u, 77u, 0xffffffffu}) {
        Bytes b;
        b.header(1, 0).str("t").u32(1).u64(4);
        std::size_t const at = b.size();
        b.u32(id).u64(0).zeros(64);
        expect_format_error(b.data, "tensor \"t\".type", at, "unknown ggml type id " + std::to_string(id));
    }
    Bytes removed;
    removed.header(1, 0).str("t").u32(1).u64(32);
    std::size_t const at = removed.size();
    removed.u32(4).u64(0).zeros(64);
    expect_format_error(removed.data, "tensor \"t\".type", at, "unknown ggml type id 4 (Q4_2, removed from ggml");
}

TEST(GgufMalformed, MisalignedOffset) {
    Bytes b;
    b.header(2, 0).tensor("a", {8}, 0, 0).str("b").u32(1).u64(8).u32(0);
    std::size_t const at = b.size();
    b.u64(40).zeros(128);
    expect_format_error(b.data, "tensor \"b\".offset", at, "not a multiple of the alignment 32");
}

TEST(GgufMalformed, TensorDataPastTheEnd) {
    Bytes b;
    b.header(1, 0).str("t").u32(2).u64(8).u64(4).u32(0);
    std::size_t const at = b.size();
    b.u64(0);
    b.zeros(32 - b.size() % 32).zeros(127);  // 127 of the 128 bytes
    expect_format_error(b.data, "tensor \"t\".offset", at, "past the end");

    // An offset near 2^64 must not wrap around.
    Bytes wrap;
    wrap.header(1, 0).str("t").u32(1).u64(8).u32(0);
    std::size_t const wrap_at = wrap.size();
    wrap.u64(~std::uint64_t{31}).zeros(64);
    expect_format_error(wrap.data, "tensor \"t\".offset", wrap_at, "past the end");

    // An empty tensor (a zero dimension) in a file that ends before its data section would start
    // (found by the fuzzer): its offset still lies past the end.
    Bytes empty;
    empty.header(1, 0).str("t").u32(4).u64(0).u64(0).u64(0).u64(0).u32(0);
    std::size_t const empty_at = empty.size();
    empty.u64(0);  // 80 bytes: the data section would start at 96
    expect_format_error(empty.data, "tensor \"t\".offset", empty_at, "past the end");
}

// Tensor data follows the declaration order, each tensor at the padded end of the one before:
// tensors that share bytes (one 4 MiB file declaring 2,500 views of the same bytes), come out of
// order or leave gaps are refused, naming the tensor, the offset expected and the tensor before.
TEST(GgufMalformed, TensorDataThatOverlapsIsOutOfOrderOrLeavesGaps) {
    Bytes shared;
    shared.header(3, 0).tensor("a", {8}, 0, 0);
    std::size_t const shared_at = shared.size() + 8 + 1 + 4 + 8 + 4;  // b's offset field
    shared.tensor("b", {8}, 0, 0).tensor("c", {8}, 0, 32).zeros(128);
    expect_format_error(shared.data, "tensor \"b\".offset", shared_at,
                        "not where the tensors before it end (32, after \"a\")");
    expect_format_error(shared.data, "tensor \"b\".offset", shared_at, "overlaps an earlier tensor");

    Bytes swapped;
    swapped.header(2, 0);
    std::size_t const swapped_at = swapped.size() + 8 + 1 + 4 + 8 + 4;
    swapped.tensor("a", {8}, 0, 32).tensor("b", {8}, 0, 0).zeros(128);
    expect_format_error(swapped.data, "tensor \"a\".offset", swapped_at, "is not where the tensors before it end (0)");

    Bytes gap;
    gap.header(2, 0).tensor("a", {8}, 0, 0);
    std::size_t const gap_at = gap.size() + 8 + 1 + 4 + 8 + 4;
    gap.tensor("b", {8}, 0, 64).zeros(160);
    expect_format_error(gap.data, "tensor \"b\".offset", gap_at, "(32, after \"a\")");
}

// Anything but a regular file is refused at once: a FIFO without a writer must not block open().
TEST(Gguf, OpenRefusesFifosAndDevices) {
    TempDir const dir;
    std::filesystem::path const fifo = dir / "model.gguf";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    try {
        (void)File::open(fifo);
        ADD_FAILURE() << "a FIFO opened as a GGUF file";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("not a regular file (a FIFO)"), std::string::npos) << e.what();
    }
    try {
        (void)File::open("/dev/null");
        ADD_FAILURE() << "/dev/null opened as a GGUF file";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("not a regular file (a device)"), std::string::npos) << e.what();
    }
}

TEST(GgufMalformed, DuplicateTensorNames) {
    Bytes b;
    b.header(2, 0).tensor("w", {8}, 0, 0);
    std::size_t const at = b.size();
    b.tensor("w", {8}, 0, 32).zeros(128);
    expect_format_error(b.data, "tensor.name[1]", at, "duplicate tensor name \"w\"");

    std::vector<gguf::TensorToWrite> t;
    t.emplace_back("w", Tensor<float>::zeros(Shape{2}));
    t.emplace_back("w", Tensor<float>::zeros(Shape{2}));
    EXPECT_THROW((void)gguf::write_to_memory(gguf::Metadata{}, t), FormatError);
}

TEST(GgufMalformed, NamesFromTheFileArePrintedSafely) {
    Bytes b;
    b.header(1, 0).str(std::string("bad\n\x01\"name", 10)).u32(7).zeros(100);
    try {
        (void)parse(b.data);
        ADD_FAILURE();
    } catch (FormatError const& e) {
        EXPECT_NE(std::string(e.what()).find("bad\\x0a\\x01\\\"name"), std::string::npos) << e.what();
    }
}

TEST(Gguf, PrintableKeepsUtf8AndEscapesEverythingElse) {
    EXPECT_EQ(gguf::printable("gr\xc3\xbc\xc3\x9f \xe2\x9c\x93 \xf0\x9f\x98\x80"),
              "gr\xc3\xbc\xc3\x9f \xe2\x9c\x93 \xf0\x9f\x98\x80");
    EXPECT_EQ(gguf::printable("a\x1b[31mb"), "a\\x1b[31mb");        // terminal escapes
    EXPECT_EQ(gguf::printable("\xc2\x9b"), "\\xc2\\x9b");           // C1 control (CSI)
    EXPECT_EQ(gguf::printable("\xc3"), "\\xc3");                    // cut sequence
    EXPECT_EQ(gguf::printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
    EXPECT_EQ(gguf::printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong
    EXPECT_EQ(gguf::printable("q\"b\\"), "q\\\"b\\\\");
    EXPECT_EQ(gguf::printable(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
}

// ---- truncation anywhere -------------------------------------------------------------------------------

// Every prefix that cuts into what the reader needs is a FormatError; longer prefixes still parse.
void expect_truncations_rejected(std::vector<std::byte> const& bytes) {
    File const whole = parse(bytes);
    std::uint64_t needed = whole.data_offset();
    for (auto const& t : whole.tensors()) needed = std::max(needed, whole.data_offset() + t.offset + t.bytes);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        std::vector<std::byte> const cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        if (n < needed) {
            EXPECT_THROW((void)parse(cut), FormatError) << "truncated to " << n << " of " << bytes.size() << " bytes";
        } else {
            EXPECT_NO_THROW((void)parse(cut)) << "truncated to " << n << " of " << bytes.size() << " bytes";
        }
    }
}

TEST(GgufMalformed, TruncationAtEveryByteOfASmallFile) {
    auto const bytes = samples::small_file();
    File const f = parse(bytes);
    auto const& last = f.tensors().back();
    ASSERT_EQ(f.data_offset() + last.offset + last.bytes, bytes.size()) << "the small file has no trailing padding";
    expect_truncations_rejected(bytes);
}

TEST(GgufMalformed, TruncationAtEveryByteOfTheFullSample) {
    expect_truncations_rejected(gguf::write_to_memory(samples::every_type_metadata(), samples::every_type_tensors()));
}

TEST(GgufMalformed, TruncatedFileOnDisk) {
    TempDir dir;
    auto const bytes = samples::small_file();
    for (std::size_t n : {std::size_t{1}, std::size_t{24}, bytes.size() / 2, bytes.size() - 1}) {
        auto const path = dir / ("cut" + std::to_string(n) + ".gguf");
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<char const*>(bytes.data()), static_cast<std::streamsize>(n));
        EXPECT_THROW((void)File::open(path), FormatError) << n;
    }
}

// Random single-byte corruptions never crash: each file parses or gives FormatError, and whatever
// parses loads.
TEST(GgufMalformed, RandomCorruptionsParseOrFailCleanly) {
    auto const original = gguf::write_to_memory(samples::every_type_metadata(), samples::every_type_tensors());
    std::mt19937 rng(fresh_seed());
    for (int trial = 0; trial < 3000; ++trial) {
        auto bytes = original;
        int const edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; ++e) bytes[rng() % bytes.size()] = static_cast<std::byte>(rng() & 0xff);
        try {
            File const f = parse(bytes);
            for (auto const& t : f.tensors())
                if (t.dtype) (void)load_any(f, t);
        } catch (FormatError const&) {
        }
    }
}
}  // namespace
}  // namespace rayo::test
