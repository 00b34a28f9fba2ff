// libFuzzer target: any bytes, parsed as a GGUF file in memory. Every metadata value and tensor
// description is walked and every tensor rayo can hold is loaded on the CPU; the only exception
// allowed out of the parser is rayo::FormatError (anything else, or a sanitizer report, is a finding).
#include <rayo/gguf.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace {

namespace gguf = rayo::gguf;

std::size_t walk(gguf::Array const& a) {
    std::size_t n = a.size();
    if (auto const* nested = std::get_if<std::vector<gguf::Array>>(&a.items))
        for (auto const& inner : *nested) n += walk(inner);
    if (auto const* strings = std::get_if<std::vector<std::string>>(&a.items))
        for (auto const& s : *strings) n += s.size();
    return n;
}

template <class T>
std::size_t load(gguf::File const& f, gguf::TensorInfo const& t) {
    auto const host = f.load<T>(t.name).to_vector();
    if (host.size() * sizeof(T) != t.bytes) std::abort();  // the loaded tensor must hold exactly the stored bytes
    auto const raw = f.data(t);
    if (!host.empty() && std::memcmp(host.data(), raw.data(), raw.size()) != 0) std::abort();
    return host.size();
}

std::size_t load_any(gguf::File const& f, gguf::TensorInfo const& t) {
    switch (*t.dtype) {
        case rayo::DType::f32: return load<float>(f, t);
        case rayo::DType::f16: return load<rayo::half>(f, t);
        case rayo::DType::bf16: return load<rayo::bfloat16>(f, t);
        case rayo::DType::i32: return load<std::int32_t>(f, t);
        case rayo::DType::i64: return load<std::int64_t>(f, t);
        case rayo::DType::q4_k: return load<rayo::q4_k>(f, t);
        case rayo::DType::q6_k: return load<rayo::q6_k>(f, t);
        case rayo::DType::q8_k: return load<rayo::q8_k>(f, t);
        case rayo::DType::q8_0: return load<rayo::q8_0>(f, t);
        case rayo::DType::q4_0: return load<rayo::q4_0>(f, t);
        case rayo::DType::q5_k: return load<rayo::q5_k>(f, t);
    }
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::span<std::byte const> const bytes(reinterpret_cast<std::byte const*>(data), size);
    try {
        gguf::File const f = gguf::File::from_memory(bytes, "fuzz");
        std::size_t sink = f.version() + f.alignment();
        for (auto const& [key, value] : f.metadata()) {
            sink += key.size() + gguf::to_string(value, 4).size();
            if (auto const* a = std::get_if<gguf::Array>(&value)) sink += walk(*a);
            if (f.metadata().find(key) != &value) std::abort();  // lookup finds the entry itself
        }
        for (auto const& t : f.tensors()) {
            if (f.find(t.name) != &t) std::abort();
            if (t.offset % f.alignment() != 0 || f.data_offset() + t.offset + t.bytes > size) std::abort();
            sink += t.shape.numel() + t.type_name.size();
            if (t.dtype)
                sink += load_any(f, t);
            else {
                try {
                    (void)f.load<float>(t.name);
                    std::abort();  // a type rayo cannot hold must not load
                } catch (rayo::Unsupported const&) {
                }
            }
        }
        // Whatever parsed survives a write: the rewritten file parses, and writing it again gives
        // the same bytes (compared as bytes, so NaN metadata values count as equal).
        if (size < 65536) {
            auto rewrite = [](gguf::File const& file) {
                std::vector<gguf::TensorToWrite> tensors;
                for (auto const& t : file.tensors())
                    tensors.push_back(gguf::TensorToWrite::raw(t.name, t.type, t.shape, file.data(t)));
                return gguf::write_to_memory(file.metadata(), tensors);
            };
            auto const once = rewrite(f);
            gguf::File const g = gguf::File::from_memory(once, "rewritten");
            if (g.tensors().size() != f.tensors().size() || g.metadata().size() != f.metadata().size()) std::abort();
            if (rewrite(g) != once) std::abort();
        }
        return sink == 0xdeadbeef ? 1 : 0;
    } catch (rayo::FormatError const&) {
        return 0;
    }
}
