// Writes a fuzzer's seed corpus: rayo-gguf-corpus DIR [gguf|llama]. gguf: the sample files the
// GGUF tests use (tests/support/gguf_samples.hpp); llama: tiny Llama models, valid and broken
// (tests/support/llama_samples.hpp).
#include "support/gguf_samples.hpp"
#include "support/llama_samples.hpp"

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using Files = std::vector<std::pair<std::string, std::vector<std::byte>>>;

Files llama_files() {
    Files files;
    for (auto& sample : rayo::test::llama_samples::corpus()) files.emplace_back(sample.name, std::move(sample.bytes));
    return files;
}

}  // namespace

int main(int argc, char** argv) {
    std::string_view const which = argc == 3 ? argv[2] : "gguf";
    if ((argc != 2 && argc != 3) || (which != "gguf" && which != "llama")) {
        std::cerr << "usage: " << argv[0] << " DIR [gguf|llama]\n";
        return 2;
    }
    std::filesystem::path const dir = argv[1];
    std::filesystem::create_directories(dir);
    Files const files = which == "llama" ? llama_files() : rayo::test::gguf_samples::corpus();
    for (auto const& [name, bytes] : files) {
        std::ofstream out(dir / name, std::ios::binary);
        out.write(reinterpret_cast<char const*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!out) {
            std::cerr << "cannot write " << (dir / name) << "\n";
            return 1;
        }
        std::cout << (dir / name).string() << " (" << bytes.size() << " bytes)\n";
    }
}
