// RAYO_DUMP_KERNELS=DIR: every kernel a backend loads is written to DIR as it was handed to the
// driver. Run with the directory in the environment, in a process of its own (kernels loaded
// earlier in a process are not written again), over the GPUs present: here lavapipe and the stand-in
// libcuda.so.1 (support/fake_cuda_driver.cpp), which loads the PTX it is given and runs nothing.
// Also: the C++ setter, its refusal of a directory that cannot exist, and no files where unset.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rayo/rayo.hpp"

namespace fs = std::filesystem;

namespace {

int failures = 0;

void expect(bool ok, std::string const& what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
    }
}

std::vector<char> bytes_of(fs::path const& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The files of `dir` with `extension`.
std::vector<fs::path> files(fs::path const& dir, std::string const& extension) {
    std::vector<fs::path> out;
    if (fs::is_directory(dir))
        for (auto const& entry : fs::directory_iterator(dir))
            if (entry.path().extension() == extension) out.push_back(entry.path());
    return out;
}

// Runs an element-wise op and a row reduction on `device`, loading their kernels.
void run_ops(rayo::Device device) {
    auto const x = rayo::Tensor<float>::from(std::vector<float>{1, -2, 3, -4, 5, -6}, {2, 3}).to(device);
    auto const y = rayo::softmax(rayo::relu(x));
    device.synchronize();
    (void)y;
}

}  // namespace

int main() {
    char const* env = std::getenv("RAYO_DUMP_KERNELS");
    if (!env || !*env) {
        std::fprintf(stderr, "kernel_dump_test: run with RAYO_DUMP_KERNELS=DIR\n");
        return 2;
    }
    fs::path const dir = env;
    expect(rayo::kernel_dump_directory() == dir.string(), "kernel_dump_directory() reads RAYO_DUMP_KERNELS");

    int vulkan = 0, cuda = 0;
    for (rayo::Device d : rayo::Device::all()) {
        if (d.kind() == rayo::DeviceKind::cpu) continue;
        run_ops(d);
        (d.kind() == rayo::DeviceKind::vulkan ? vulkan : cuda) += 1;
    }
    if (vulkan > 0) {
        auto const spv = files(dir, ".spv");
        expect(!spv.empty(), "a Vulkan device ran ops and no .spv file was written");
        for (fs::path const& f : spv) {
            auto const b = bytes_of(f);
            std::uint32_t magic = 0;
            if (b.size() >= 4) std::memcpy(&magic, b.data(), 4);
            expect(b.size() % 4 == 0 && b.size() >= 20 && magic == 0x07230203u, f.string() + " is not SPIR-V");
        }
    }
    if (cuda > 0) {
        auto const ptx = files(dir, ".ptx");
        expect(!ptx.empty(), "a CUDA device ran ops and no .ptx file was written");
        for (fs::path const& f : ptx) {
            auto const b = bytes_of(f);
            std::string const text(b.begin(), b.end());
            // NAME.TARGET.ptx: the module holds the entry NAME.
            std::string const entry = f.stem().stem().string();
            expect(
                text.find(".version") != std::string::npos && text.find(".entry " + entry + "(") != std::string::npos,
                f.string() + " is not the PTX module of its kernel " + entry);
        }
    }

    // Unset: nothing more is written; set again from C++: kernels loaded afterwards go there.
    fs::path const second = dir / "second";
    rayo::set_kernel_dump_directory("");
    expect(rayo::kernel_dump_directory().empty(), "set_kernel_dump_directory(\"\") turns the dumps off");
    rayo::set_kernel_dump_directory(second.string());
    expect(fs::is_directory(second), "set_kernel_dump_directory creates the directory");
    // A directory that cannot exist (a file stands in its way) is refused, naming it.
    fs::path const blocked = dir / "a-file";
    std::ofstream(blocked) << "x";
    try {
        rayo::set_kernel_dump_directory((blocked / "below").string());
        expect(false, "a directory below a file was accepted");
    } catch (rayo::Error const& e) {
        expect(std::string(e.what()).find("a-file") != std::string::npos, "the refusal names the directory");
    }
    expect(rayo::kernel_dump_directory() == second.string(), "a refused directory leaves the setting as it was");

    std::printf("%s: %d Vulkan and %d CUDA devices; %zu SPIR-V and %zu PTX files in %s\n", failures ? "FAILED" : "ok",
                vulkan, cuda, files(dir, ".spv").size(), files(dir, ".ptx").size(), dir.c_str());
    return failures ? 1 : 0;
}
