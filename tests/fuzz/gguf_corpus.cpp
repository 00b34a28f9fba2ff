// Writes the fuzzer's seed corpus: rayo-gguf-corpus DIR (the sample files the GGUF tests use).
#include "support/gguf_samples.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: " << argv[0] << " DIR\n";
        return 2;
    }
    std::filesystem::path const dir = argv[1];
    std::filesystem::create_directories(dir);
    for (auto const& [name, bytes] : rayo::test::gguf_samples::corpus()) {
        std::ofstream out(dir / name, std::ios::binary);
        out.write(reinterpret_cast<char const*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!out) {
            std::cerr << "cannot write " << (dir / name) << "\n";
            return 1;
        }
        std::cout << (dir / name).string() << " (" << bytes.size() << " bytes)\n";
    }
}
