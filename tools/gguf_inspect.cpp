// Prints a GGUF file's header, metadata and tensor table; with --matmul NAME, loads that weight on the
// best device and times rayo::linear(x, w) for a random x of shape [1, in].
//
//   rayo-gguf-inspect model.gguf
//   rayo-gguf-inspect model.gguf --matmul blk.0.ffn_down.weight --runs 20
#include <rayo/gguf.hpp>
#include <rayo/rayo.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "progress_line.hpp"

namespace gguf = rayo::gguf;

namespace {

std::string human_bytes(std::uint64_t bytes) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(2);
    if (bytes >= (1ull << 30))
        s << static_cast<double>(bytes) / (1ull << 30) << " GiB";
    else if (bytes >= (1ull << 20))
        s << static_cast<double>(bytes) / (1ull << 20) << " MiB";
    else if (bytes >= 1024)
        s << static_cast<double>(bytes) / 1024 << " KiB";
    else
        s << bytes << " B";
    return s.str();
}

void print_metadata(gguf::File const& file) {
    std::cout << "\nmetadata (" << file.metadata().size() << " keys):\n";
    std::size_t width = 0;
    // Keys and names come from the file: printed escaped, so they cannot send terminal controls.
    auto const key_text = [](std::string const& key) {
        return key.empty() ? std::string("\"\"") : gguf::printable(key, 64);
    };
    for (auto const& e : file.metadata()) width = std::max(width, key_text(e.key).size());
    for (auto const& e : file.metadata()) {
        std::cout << "  " << std::left << std::setw(static_cast<int>(width)) << key_text(e.key) << "  " << std::setw(7)
                  << to_string(type_of(e.value)) << "  " << gguf::to_string(e.value, 6) << "\n";
    }
}

void print_tensors(gguf::File const& file) {
    std::uint64_t total = 0;
    std::size_t name_width = 4, shape_width = 5;
    for (auto const& t : file.tensors()) {
        total += t.bytes;
        name_width = std::max(name_width, gguf::printable(t.name, 64).size());
        shape_width = std::max(shape_width, t.shape.to_string().size());
    }
    std::cout << "\ntensors (" << file.tensors().size() << ", " << human_bytes(total)
              << "; shapes in rayo order, row-major: GGUF's ne reversed):\n";
    auto const row = [&](std::string const& name, std::string const& shape, std::string const& type,
                         std::string const& bytes, std::string const& mib, std::string const& note) {
        std::cout << "  " << std::left << std::setw(static_cast<int>(name_width)) << name << "  "
                  << std::setw(static_cast<int>(shape_width)) << shape << "  " << std::setw(8) << type << std::right
                  << std::setw(14) << bytes << std::setw(11) << mib << (note.empty() ? "" : "  ") << note << "\n";
    };
    row("name", "shape", "type", "bytes", "MiB", "");
    for (auto const& t : file.tensors()) {
        std::ostringstream mib;
        mib << std::fixed << std::setprecision(2) << static_cast<double>(t.bytes) / (1ull << 20);
        row(gguf::printable(t.name, 64), t.shape.to_string(), std::string(t.type_name), std::to_string(t.bytes),
            mib.str(), t.dtype ? "" : "(not loadable by rayo)");
    }
}

template <class W>
constexpr bool linear_accepts = requires(rayo::Tensor<float> const& x, rayo::Tensor<W> const& w) {
    rayo::linear(x, w);
};

template <class W>
int time_linear(gguf::File const& file, gguf::TensorInfo const& info, rayo::Device device, int runs) {
    if constexpr (!linear_accepts<W>) {
        std::cout << "quantized linear is not available yet: rayo::linear does not take Tensor<"
                  << to_string(rayo::dtype_of<W>) << "> weights in this build\n";
        return 1;
    } else {
        using clock = std::chrono::steady_clock;
        auto const t0 = clock::now();
        rayo::Tensor<W> const w = file.load<W>(
            info.name, device, rayo_examples::progress_line("loading " + info.name + " onto " + device.id()));
        device.synchronize();
        double const load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();

        auto const out = w.shape()[0], in = w.shape()[1];
        std::mt19937 rng(42);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> host(static_cast<std::size_t>(in));
        for (auto& v : host) v = dist(rng);
        auto const x = rayo::Tensor<float>::from(host, rayo::Shape{1, in}, device);

        auto y = rayo::linear(x, w);  // warm-up
        device.synchronize();
        std::vector<double> times;
        for (int r = 0; r < runs; ++r) {
            auto const start = clock::now();
            y = rayo::linear(x, w);
            device.synchronize();
            times.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
        }
        std::sort(times.begin(), times.end());
        double const median = times[times.size() / 2];
        auto const result = y.to_vector();
        std::cout << "loaded " << info.name << " (" << info.type_name << ", " << human_bytes(info.bytes) << ") onto "
                  << device.id() << " in " << std::fixed << std::setprecision(2) << load_ms << " ms\n";
        std::cout << "linear(x [1, " << in << "] f32, w [" << out << ", " << in << "] " << to_string(rayo::dtype_of<W>)
                  << ") on " << device.id() << " (" << device.name() << "): median " << std::setprecision(3) << median
                  << " ms over " << runs << " runs (min " << times.front() << ", max " << times.back() << "), "
                  << std::setprecision(1) << static_cast<double>(info.bytes) / (median * 1e-3) / 1e9
                  << " GB/s of weights\n";
        std::cout << "y[0:" << std::min<std::size_t>(4, result.size()) << "] =";
        for (std::size_t i = 0; i < std::min<std::size_t>(4, result.size()); ++i)
            std::cout << ' ' << std::setprecision(6) << result[i];
        std::cout << "\n";
        return 0;
    }
}

int matmul(gguf::File const& file, std::string const& name, int runs) {
    gguf::TensorInfo const& info = file.tensor(name);
    std::cout << "\n";
    if (info.shape.rank() != 2) {
        std::cerr << "--matmul " << name << ": needs a 2-D weight [out, in], this one has shape "
                  << info.shape.to_string() << "\n";
        return 1;
    }
    if (!info.dtype) {
        std::cerr << "--matmul " << name << ": rayo cannot load " << info.type_name << " tensors\n";
        return 1;
    }
    // x gets one row of `in` values: only a weight with rows has its columns backed by the file's
    // bytes, so a crafted [0, 2^40] shape cannot make the tool allocate terabytes.
    if (info.shape[0] == 0 || info.shape[1] == 0) {
        std::cerr << "--matmul " << name << ": the weight " << info.shape.to_string()
                  << " is empty: nothing to multiply\n";
        return 1;
    }
    rayo::Device const device = rayo::Device::best();
    switch (*info.dtype) {
        case rayo::DType::f32: return time_linear<float>(file, info, device, runs);
        case rayo::DType::f16: return time_linear<rayo::half>(file, info, device, runs);
        case rayo::DType::bf16: return time_linear<rayo::bfloat16>(file, info, device, runs);
        case rayo::DType::q4_k: return time_linear<rayo::q4_k>(file, info, device, runs);
        case rayo::DType::q6_k: return time_linear<rayo::q6_k>(file, info, device, runs);
        case rayo::DType::q8_k: return time_linear<rayo::q8_k>(file, info, device, runs);
        case rayo::DType::q8_0: return time_linear<rayo::q8_0>(file, info, device, runs);
        case rayo::DType::q4_0: return time_linear<rayo::q4_0>(file, info, device, runs);
        case rayo::DType::q5_k: return time_linear<rayo::q5_k>(file, info, device, runs);
        case rayo::DType::i32:
        case rayo::DType::i64: break;
    }
    std::cerr << "--matmul " << name << ": " << info.type_name << " is not a weight type\n";
    return 1;
}

int usage(char const* argv0) {
    std::cerr << "usage: " << argv0 << " FILE.gguf [--matmul TENSOR [--runs N]]\n"
              << "  prints the GGUF header, metadata and tensors; --matmul loads TENSOR on the best device\n"
              << "  (RAYO_DEVICE overrides) and times rayo::linear(x, TENSOR) for a random x [1, in]\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string path, matmul_name;
    int runs = 10;
    for (int i = 1; i < argc; ++i) {
        std::string const arg = argv[i];
        if (arg == "--matmul" && i + 1 < argc)
            matmul_name = argv[++i];
        else if (arg == "--runs" && i + 1 < argc)
            runs = std::max(1, std::atoi(argv[++i]));
        else if (arg == "-h" || arg == "--help")
            return usage(argv[0]);
        else if (path.empty() && !arg.starts_with("--"))
            path = arg;
        else
            return usage(argv[0]);
    }
    if (path.empty()) return usage(argv[0]);

    try {
        gguf::File const file = gguf::File::open(path);
        std::cout << path << ": GGUF version " << file.version() << ", " << human_bytes(file.bytes().size())
                  << ", alignment " << file.alignment() << ", tensor data at byte " << file.data_offset() << "\n";
        print_metadata(file);
        print_tensors(file);
        if (!matmul_name.empty()) return matmul(file, matmul_name, runs);
    } catch (std::exception const& e) {  // rayo::Error, and std::bad_alloc when a weight does not fit
        std::cout.flush();
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
