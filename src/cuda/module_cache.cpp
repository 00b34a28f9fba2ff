#include "cuda/module_cache.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <set>
#include <span>
#include <vector>

#include "core/kernel_dump.hpp"
#include "core/logging.hpp"
#include "rayo/error.hpp"

namespace rayo::cuda {

namespace {

constexpr std::size_t jit_log_bytes = 64 * 1024;
// Blocks get this much dynamic shared memory without opting in.
constexpr unsigned default_shared_bytes = 48 * 1024;
// At most this many PTX lines are quoted after a JIT error log.
constexpr std::size_t quoted_lines_max = 8;

// The line numbers a ptxas log names ("ptxas application ptx input, line 12; error : ..."), in order.
std::set<std::size_t> lines_named(std::string_view log) {
    std::set<std::size_t> lines;
    constexpr std::string_view marker = "line ";
    for (std::size_t at = log.find(marker); at != std::string_view::npos; at = log.find(marker, at + 1)) {
        char const* first = log.data() + at + marker.size();
        std::size_t line = 0;
        auto const [end, ec] = std::from_chars(first, log.data() + log.size(), line);
        if (ec == std::errc{} && end != first && line > 0) lines.insert(line);
    }
    return lines;
}

std::string_view ptx_line(std::string_view ptx, std::size_t line) {
    std::size_t begin = 0;
    for (std::size_t i = 1; i < line; ++i) {
        begin = ptx.find('\n', begin);
        if (begin == std::string_view::npos) return {};
        ++begin;
    }
    return ptx.substr(begin, ptx.find('\n', begin) - begin);
}

std::string dims(Dim3 d) {
    std::string text = std::to_string(d.x);  // appended, not "(" + ...: GCC 12 warns falsely on that (-Wrestrict)
    text.append(", ").append(std::to_string(d.y)).append(", ").append(std::to_string(d.z));
    return "(" + text + ")";
}

}  // namespace

ModuleCache::ModuleCache(Stream const& stream, unsigned max_shared_bytes)
    : stream_(stream), max_shared_bytes_(max_shared_bytes) {}

ModuleCache::~ModuleCache() {
    PrimaryContext const& context = stream_.context();
    try {
        ScopedCurrent const current(context);
        stream_.synchronize("unloading modules");
        for (auto const& [key, module] : modules_) {
            CUresult const result = context.driver().cuModuleUnload(module.handle);
            if (result != CUresult::success && result != CUresult::deinitialized)
                detail::log(LogLevel::error,
                            "rayo: " + context.label() + ": cuModuleUnload(" + key + "): " + describe(result));
        }
    } catch (std::exception const& e) {  // the driver is gone at exit: so are the modules
        detail::log(LogLevel::debug, "rayo: " + context.label() + ": unloading modules: " + e.what());
    }
}

CUmodule ModuleCache::load(std::string const& key, std::string const& ptx) const {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    std::vector<char> error_log(jit_log_bytes, '\0'), info_log(jit_log_bytes, '\0');
    CUjit_option options[] = {CUjit_option::error_log_buffer, CUjit_option::error_log_buffer_size_bytes,
                              CUjit_option::info_log_buffer,  CUjit_option::info_log_buffer_size_bytes,
                              CUjit_option::log_verbose,      CUjit_option::optimization_level};
    // Sizes and levels are passed in the pointer itself, as the driver API specifies.
    void* values[] = {error_log.data(),
                      reinterpret_cast<void*>(std::uintptr_t{jit_log_bytes}),
                      info_log.data(),
                      reinterpret_cast<void*>(std::uintptr_t{jit_log_bytes}),
                      reinterpret_cast<void*>(std::uintptr_t{1}),
                      reinterpret_cast<void*>(std::uintptr_t{4})};
    CUmodule module = nullptr;
    CUresult const result =
        context.driver().cuModuleLoadDataEx(&module, ptx.c_str(), std::size(options), options, values);
    error_log.back() = info_log.back() = '\0';
    std::string_view const errors(error_log.data(), std::strlen(error_log.data()));
    std::string_view const info(info_log.data(), std::strlen(info_log.data()));
    if (result != CUresult::success) {
        std::string message =
            context.label() + ": loading PTX module '" + key + "' (cuModuleLoadDataEx) failed: " + describe(result);
        if (!errors.empty()) message += "\nJIT error log:\n" + std::string(errors);
        std::size_t quoted = 0;
        for (std::size_t line : lines_named(errors)) {
            if (quoted++ == quoted_lines_max) break;
            message += "\nPTX line " + std::to_string(line) + ": " + std::string(ptx_line(ptx, line));
        }
        if (result == CUresult::out_of_memory) throw OutOfMemory(message);
        throw DeviceError(message, static_cast<int>(result), error_name(result));
    }
    if (!info.empty() && detail::log_enabled(LogLevel::debug))
        detail::log(LogLevel::debug, "rayo: " + context.label() + ": compiled '" + key + "':\n" + std::string(info));
    return module;
}

CUfunction ModuleCache::function(std::string const& key, std::string_view entry,
                                 std::function<std::string()> const& make_ptx) {
    std::lock_guard lock(mutex_);
    auto it = modules_.find(key);
    if (it != modules_.end())
        if (auto f = it->second.functions.find(entry); f != it->second.functions.end()) return f->second;
    if (it == modules_.end()) {
        // Generated and compiled under the lock: a thread asking for the same kernel meanwhile
        // waits for it rather than compiling it twice.
        std::string const ptx = make_ptx();
        // RAYO_DUMP_KERNELS: named by the kernel and the target the key ends with ("...@sm_90").
        std::string name(entry);
        if (std::size_t const at = key.rfind('@'); at != std::string::npos) name.append(".").append(key, at + 1);
        detail::dump_kernel(name, ".ptx", std::as_bytes(std::span(ptx.data(), ptx.size())));
        CUmodule const module = load(key, ptx);
        it = modules_.emplace(key, Module{module, {}}).first;
    }
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    std::string name(entry);
    CUfunction function = nullptr;
    check(context.driver().cuModuleGetFunction(&function, it->second.handle, name.c_str()),
          context.label() + ": cuModuleGetFunction('" + name + "') in module '" + key + "'");
    it->second.functions.emplace(std::move(name), function);
    return function;
}

void ModuleCache::launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, std::span<void*> args,
                         bool starts_early) {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    Driver const& d = context.driver();
    if (shared_bytes > default_shared_bytes) {
        if (shared_bytes > max_shared_bytes_)
            throw Unsupported(context.label() + ": a kernel asks for " + std::to_string(shared_bytes) +
                              " bytes of shared memory per block; this device allows at most " +
                              std::to_string(max_shared_bytes_));
        std::lock_guard lock(mutex_);
        unsigned& opted_in = shared_opt_in_[function];
        if (opted_in < shared_bytes) {
            check(d.cuFuncSetAttribute(function, CUfunction_attribute::max_dynamic_shared_size_bytes,
                                       static_cast<int>(shared_bytes)),
                  context.label() + ": cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                      std::to_string(shared_bytes) + ")");
            opted_in = shared_bytes;
        }
    }
    void** const params = args.empty() ? nullptr : args.data();
    CUresult result = CUresult::success;
    if (starts_early && d.cuLaunchKernelEx) {
        CUlaunchAttribute attribute{.id = CUlaunchAttributeID::programmatic_stream_serialization};
        attribute.value.programmatic_stream_serialization_allowed = 1;
        CUlaunchConfig const config{.grid_x = grid.x,
                                    .grid_y = grid.y,
                                    .grid_z = grid.z,
                                    .block_x = block.x,
                                    .block_y = block.y,
                                    .block_z = block.z,
                                    .shared_bytes = shared_bytes,
                                    .stream = stream_.handle(),
                                    .attributes = &attribute,
                                    .attribute_count = 1};
        result = d.cuLaunchKernelEx(&config, function, params, nullptr);
    } else {
        result = d.cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
                                  stream_.handle(), params, nullptr);
    }
    if (result != CUresult::success)
        throw_error(result, context.label() +
                                (starts_early && d.cuLaunchKernelEx ? ": cuLaunchKernelEx" : ": cuLaunchKernel") +
                                " (grid " + dims(grid) + ", block " + dims(block) + ", " +
                                std::to_string(shared_bytes) + " bytes of dynamic shared memory)");
}

std::size_t ModuleCache::module_count() const {
    std::lock_guard lock(mutex_);
    return modules_.size();
}

}  // namespace rayo::cuda
