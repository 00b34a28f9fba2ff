// Sample GGUF contents shared by the GGUF tests and the fuzzer's seed-corpus generator: metadata of
// every value type, tensors of every type rayo loads, and a few small files.
#pragma once

#include <rayo/gguf.hpp>
#include <rayo/rayo.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rayo::test::gguf_samples {

namespace gguf = rayo::gguf;

inline std::vector<std::byte> pattern_bytes(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> out(n);
    for (auto& b : out) b = static_cast<std::byte>(rng() & 0xffu);
    return out;
}

// Blocks built byte by byte (no quantizer needed): any bytes are a valid block to store and load.
template <class Block>
std::vector<Block> blocks(std::size_t n, std::uint32_t seed) {
    std::vector<Block> out(n);
    auto const bytes = pattern_bytes(n * sizeof(Block), seed);
    if (n) std::memcpy(static_cast<void*>(out.data()), bytes.data(), bytes.size());
    return out;
}

template <class T>
std::vector<T> values(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
    std::vector<T> out;
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>)
            out.push_back(static_cast<T>(static_cast<std::int64_t>(rng()) - (1ll << 31)));
        else
            out.push_back(T(dist(rng)));
    }
    return out;
}

inline gguf::Metadata every_type_metadata(std::uint32_t alignment = 64) {
    using gguf::Array;
    gguf::Metadata md;
    md.set("general.architecture", "rayo-test");
    md.set("general.alignment", std::uint32_t{alignment});
    md.set("test.u8", std::uint8_t{200});
    md.set("test.i8", std::int8_t{-100});
    md.set("test.u16", std::uint16_t{60000});
    md.set("test.i16", std::int16_t{-30000});
    md.set("test.u32", std::uint32_t{4000000000u});
    md.set("test.i32", std::int32_t{-2000000000});
    md.set("test.f32", 3.5f);
    md.set("test.bool.true", true);
    md.set("test.bool.false", false);
    md.set("test.string", "hello, gguf");
    md.set("test.string.empty", "");
    md.set("test.string.utf8", "gr\xc3\xbc\xc3\x9f dich \xe2\x9c\x93");
    md.set("test.u64", std::uint64_t{1} << 60);
    md.set("test.i64", -(std::int64_t{1} << 60));
    md.set("test.f64", 2.718281828459045);
    md.set("test.array.u8", std::vector<std::uint8_t>{0, 1, 255});
    md.set("test.array.i8", std::vector<std::int8_t>{-128, 0, 127});
    md.set("test.array.u16", std::vector<std::uint16_t>{1, 65535});
    md.set("test.array.i16", std::vector<std::int16_t>{-32768, 32767});
    md.set("test.array.u32", std::vector<std::uint32_t>{7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    md.set("test.array.i32", std::vector<std::int32_t>{-1, 2, -3});
    md.set("test.array.f32", std::vector<float>{1.5f, -0.0f, std::numeric_limits<float>::infinity()});
    md.set("test.array.bool", std::vector<bool>{true, false, true});
    md.set("test.array.string", std::vector<std::string>{"a", "", "three"});
    md.set("test.array.u64", std::vector<std::uint64_t>{std::numeric_limits<std::uint64_t>::max()});
    md.set("test.array.i64", std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 0});
    md.set("test.array.f64", std::vector<double>{1e300, -1e-300});
    md.set("test.array.empty.string", std::vector<std::string>{});
    md.set("test.array.empty.f32", std::vector<float>{});
    md.set("test.array.nested",
           std::vector<Array>{Array(std::vector<std::uint32_t>{1, 2}), Array(std::vector<std::string>{"x", ""}),
                              Array(std::vector<Array>{Array(std::vector<bool>{true}), Array(std::vector<Array>{})}),
                              Array(std::vector<double>{})});
    md.set("", "an empty key is allowed");
    return md;
}

// Eight levels of arrays (the most the reader accepts) around one u8.
inline gguf::Array nested_array(std::size_t depth) {
    gguf::Array a(std::vector<std::uint8_t>{42});
    for (std::size_t i = 1; i < depth; ++i) a = gguf::Array(std::vector<gguf::Array>{std::move(a)});
    return a;
}

// Tensors of every type rayo loads, odd shapes included (rank 0, an empty tensor, rank 4).
inline std::vector<gguf::TensorToWrite> every_type_tensors() {
    std::vector<gguf::TensorToWrite> t;
    t.emplace_back("f32.matrix", Tensor<float>::from(values<float>(15, 1), Shape{3, 5}));
    t.emplace_back("f16.matrix", Tensor<half>::from(values<half>(8, 2), Shape{2, 4}));
    t.emplace_back("bf16.vector", Tensor<bfloat16>::from(values<bfloat16>(7, 3), Shape{7}));
    t.emplace_back("i32.vector", Tensor<std::int32_t>::from(values<std::int32_t>(4, 4), Shape{4}));
    t.emplace_back("i64.vector", Tensor<std::int64_t>::from(values<std::int64_t>(2, 5), Shape{2}));
    t.emplace_back("q4_k.weight", Tensor<q4_k>::from(blocks<q4_k>(4, 6), Shape{2, 512}));
    t.emplace_back("q6_k.weight", Tensor<q6_k>::from(blocks<q6_k>(1, 7), Shape{256}));
    t.emplace_back("q8_k.weight", Tensor<q8_k>::from(blocks<q8_k>(3, 8), Shape{3, 256}));
    t.emplace_back("q8_0.weight", Tensor<q8_0>::from(blocks<q8_0>(4, 11), Shape{2, 64}));
    t.emplace_back("q4_0.weight", Tensor<q4_0>::from(blocks<q4_0>(3, 12), Shape{96}));
    t.emplace_back("q5_k.weight", Tensor<q5_k>::from(blocks<q5_k>(2, 13), Shape{2, 256}));
    t.emplace_back("f32.rank4", Tensor<float>::from(values<float>(12, 9), Shape{2, 1, 3, 2}));
    t.emplace_back("f32.empty", Tensor<float>::from(std::vector<float>{}, Shape{0, 4}));
    t.emplace_back("f32.scalar", Tensor<float>::from(values<float>(1, 10), Shape{}));
    return t;
}

// A small file whose last tensor ends exactly at the end of the file (no trailing padding), so
// cutting it anywhere removes something the reader needs.
inline std::vector<std::byte> small_file() {
    gguf::Metadata md;
    md.set("general.architecture", "tiny");
    md.set("tiny.values", std::vector<std::uint16_t>{1, 2, 3});
    md.set("tiny.nested", std::vector<gguf::Array>{gguf::Array(std::vector<std::string>{"a", ""})});
    md.set("tiny.flag", true);
    std::vector<gguf::TensorToWrite> t;
    t.emplace_back("w", Tensor<q4_k>::from(blocks<q4_k>(1, 11), Shape{256}));
    t.emplace_back("b", Tensor<float>::from(values<float>(8, 12), Shape{8}));  // 32 bytes: ends aligned
    return gguf::write_to_memory(md, t);
}

// Little-endian byte builder for hand-made (and deliberately broken) files.
class Bytes {
public:
    Bytes& u8(std::uint8_t v) { return put(v, 1); }
    Bytes& u16(std::uint16_t v) { return put(v, 2); }
    Bytes& u32(std::uint32_t v) { return put(v, 4); }
    Bytes& u64(std::uint64_t v) { return put(v, 8); }
    Bytes& str(std::string_view s) {
        u64(s.size());
        for (char c : s) data.push_back(static_cast<std::byte>(c));
        return *this;
    }
    Bytes& zeros(std::size_t n) {
        data.resize(data.size() + n);
        return *this;
    }
    Bytes& header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
        return u32(gguf::magic).u32(version).u64(tensors).u64(kvs);
    }
    // A metadata entry of type u32.
    Bytes& kv_u32(std::string_view key, std::uint32_t v) { return str(key).u32(4).u32(v); }
    // A tensor description.
    Bytes& tensor(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type, std::uint64_t offset) {
        str(name).u32(static_cast<std::uint32_t>(ne.size()));
        for (auto d : ne) u64(d);
        return u32(type).u64(offset);
    }
    [[nodiscard]] std::size_t size() const { return data.size(); }
    std::vector<std::byte> data;

private:
    Bytes& put(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) data.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
        return *this;
    }
};

// Seed files for the fuzzer: name and contents.
inline std::vector<std::pair<std::string, std::vector<std::byte>>> corpus() {
    std::vector<std::pair<std::string, std::vector<std::byte>>> files;
    auto const tensors = every_type_tensors();
    files.emplace_back("every_type.gguf", gguf::write_to_memory(every_type_metadata(), tensors));
    files.emplace_back("every_type_align32.gguf", gguf::write_to_memory(every_type_metadata(32), tensors));
    files.emplace_back("small.gguf", small_file());
    files.emplace_back("metadata_only.gguf", gguf::write_to_memory(every_type_metadata(8), {}));
    gguf::Metadata deep;
    deep.set("deep", nested_array(gguf::max_array_depth));
    files.emplace_back("nested_arrays.gguf", gguf::write_to_memory(deep, {}));
    files.emplace_back("empty.gguf", gguf::write_to_memory(gguf::Metadata{}, {}));

    // Types rayo lists but does not load, stored as raw bytes.
    static auto const q4_1 = pattern_bytes(2 * 20, 20);
    static auto const q5_0 = pattern_bytes(22, 21);
    static auto const i8 = pattern_bytes(5, 22);
    static auto const f64 = pattern_bytes(3 * 8, 23);
    static auto const q2_k = pattern_bytes(84, 24);
    std::vector<gguf::TensorToWrite> raw;
    raw.push_back(gguf::TensorToWrite::raw("q4_1", 3, Shape{64}, q4_1));
    raw.push_back(gguf::TensorToWrite::raw("q5_0", 6, Shape{32}, q5_0));
    raw.push_back(gguf::TensorToWrite::raw("i8", 24, Shape{5}, i8));
    raw.push_back(gguf::TensorToWrite::raw("f64", 28, Shape{3, 1}, f64));
    raw.push_back(gguf::TensorToWrite::raw("q2_k", 10, Shape{256}, q2_k));
    gguf::Metadata md;
    md.set("general.alignment", std::uint32_t{16});
    files.emplace_back("unsupported_types.gguf", gguf::write_to_memory(md, raw));

    // Files the reader refuses: tensors sharing their bytes, out of order, and empty tensors of
    // 2^40 and 2^62 columns (which rayo-gguf-inspect --matmul must not try to allocate for).
    Bytes shared;
    shared.header(3, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 0).tensor("c", {8}, 0, 0).zeros(64);
    files.emplace_back("shared_tensor_data.gguf", std::move(shared.data));
    Bytes swapped;
    swapped.header(2, 0).tensor("a", {8}, 0, 32).tensor("b", {8}, 0, 0).zeros(128);
    files.emplace_back("tensors_out_of_order.gguf", std::move(swapped.data));
    for (int log2 : {40, 62}) {
        Bytes empty;
        empty.header(1, 0).tensor("w", {std::uint64_t{1} << log2, 0}, 0, 0).zeros(32);
        files.emplace_back("empty_weight_2pow" + std::to_string(log2) + "_columns.gguf", std::move(empty.data));
    }
    return files;
}

}  // namespace rayo::test::gguf_samples
