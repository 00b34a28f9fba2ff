// Kernels of one device: PTX modules JIT-compiled by the driver once per kernel key and kept for
// the backend's lifetime, and their launches on the device's stream. Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cuda/stream.hpp"

namespace rayo::cuda {

// A grid or block extent, as CUDA's dim3.
struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

class ModuleCache {
public:
    // `max_shared_bytes`: the most shared memory a block may opt in to on this device.
    ModuleCache(Stream const& stream, unsigned max_shared_bytes);
    // Unloads every module (after the stream's work, which may still run their kernels).
    ~ModuleCache();
    ModuleCache(ModuleCache const&) = delete;
    ModuleCache& operator=(ModuleCache const&) = delete;

    // The kernel `entry` of the module cached under `key`. On the key's first use `make_ptx` is
    // called and its text loaded with cuModuleLoadDataEx; a JIT failure throws rayo::DeviceError
    // with the driver's error log and the PTX lines it names. `key` must name the PTX text
    // exactly (op, dtypes, tile shape, target), since the text is not compared.
    [[nodiscard]] CUfunction function(std::string const& key, std::string_view entry,
                                      std::function<std::string()> const& make_ptx);

    // Enqueues `function` on the stream. `args` holds one pointer per kernel parameter, to its
    // value. Dynamic shared memory above the default 48 KiB is opted in to per function.
    // `starts_early`: with programmatic stream serialization (cuLaunchKernelEx; a plain launch where
    // the driver lacks it), for kernels that wait for the previous one themselves.
    void launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, std::span<void*> args,
                bool starts_early = false);

    [[nodiscard]] std::size_t module_count() const;

private:
    struct Module {
        CUmodule handle = nullptr;
        std::map<std::string, CUfunction, std::less<>> functions;
    };
    [[nodiscard]] CUmodule load(std::string const& key, std::string const& ptx) const;

    Stream const& stream_;
    unsigned max_shared_bytes_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Module> modules_;
    std::unordered_map<CUfunction, unsigned> shared_opt_in_;  // the largest value set per function
};

}  // namespace rayo::cuda
