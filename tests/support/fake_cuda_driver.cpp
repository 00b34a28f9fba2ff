// A libcuda.so.1 for tests on machines without a GPU: one device (an sm_90 with 132
// multiprocessors, or the compute capability RAYO_FAKE_CUDA_CC names, e.g. 80), host memory for
// device memory, copies done at once, kernels recorded and never run, tensor maps checked and
// counted, stream capture recording the kernel launches into a graph that each cuGraphLaunch
// records again (copies, fills and waits while capturing fail as the driver's unsupported calls). Its memory pool keeps
// the counts a real one reports (CU_MEMPOOL_ATTR_*: bytes in use, reserved in 2 MiB steps and kept until trimmed, and
// their high watermarks). It lets CI drive rayo's CUDA runtime (discovery, memory, the module cache, the launch path)
// and ask what reached the driver through the rayo_fake_cuda_* functions at the end. Only what rayo resolves is here.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Result = int;
constexpr Result success = 0, invalid_value = 1, not_found = 500, capture_unsupported = 900;

struct Module {
    std::string ptx;
};
struct Function {
    Module const* module;
};
struct Launch {
    Module const* module;
    bool starts_early;  // cuLaunchKernelEx with programmatic stream serialization allowed
};

// The device's default pool. Allocations are rounded up to 512 bytes; the pool reserves whole
// 2 MiB chunks as it grows and keeps them when allocations are freed, until trimmed.
struct Pool {
    static constexpr std::uint64_t granule = 512, chunk = std::uint64_t{2} << 20;
    std::map<std::uint64_t, std::uint64_t> sizes;  // address -> bytes counted
    std::uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0, release_threshold = 0;

    static std::uint64_t round_up(std::uint64_t v, std::uint64_t m) { return (v + m - 1) / m * m; }
    void allocated(std::uint64_t address, std::size_t bytes) {
        std::uint64_t const counted = round_up(std::max<std::uint64_t>(bytes, 1), granule);
        sizes[address] = counted;
        used += counted;
        reserved = std::max(reserved, round_up(used, chunk));
        used_high = std::max(used_high, used);
        reserved_high = std::max(reserved_high, reserved);
    }
    void freed(std::uint64_t address) {
        if (auto const it = sizes.find(address); it != sizes.end()) {
            used -= it->second;
            sizes.erase(it);
        }
    }
    void trim(std::uint64_t keep) {
        reserved = std::max(round_up(used, chunk), std::min(reserved, round_up(keep, chunk)));
    }
};

// A captured stream's launches.
struct Graph {
    std::vector<Launch> launches;
};

struct State {
    std::mutex mutex;
    Graph* capturing = nullptr;  // the graph the stream is being captured into
    int graphs = 0;              // alive
    Pool pool;
    std::vector<std::unique_ptr<Module>> modules;  // kept after unloading: launches refer to them
    std::vector<std::unique_ptr<Function>> functions;
    std::vector<Launch> launches;
    int tensor_maps = 0;  // encoded by cuTensorMapEncodeTiled
    void* current = nullptr;
};

State& state() {
    static State s;
    return s;
}

int compute_capability() {
    char const* cc = std::getenv("RAYO_FAKE_CUDA_CC");
    return cc ? std::atoi(cc) : 90;
}

void* const context_handle = reinterpret_cast<void*>(std::uintptr_t{0x1000});
void* const stream_handle = reinterpret_cast<void*>(std::uintptr_t{0x2000});
void* const pool_handle = reinterpret_cast<void*>(std::uintptr_t{0x3000});

void* as_pointer(std::uint64_t address) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)); }

struct LaunchAttribute {  // cuda.h's CUlaunchAttribute: an id, padding, a 64-byte union
    int id;
    char padding[4];
    union {
        int programmatic_stream_serialization_allowed;
        char bytes[64];
    } value;
};
struct LaunchConfig {  // cuda.h's CUlaunchConfig
    unsigned grid[3], block[3], shared_bytes;
    void* stream;
    LaunchAttribute* attributes;
    unsigned attribute_count;
};

void record(void* function, bool starts_early) {
    std::lock_guard lock(state().mutex);
    Launch const launch{static_cast<Function*>(function)->module, starts_early};
    (state().capturing ? state().capturing->launches : state().launches).push_back(launch);
}

bool capturing() {
    std::lock_guard lock(state().mutex);
    return state().capturing != nullptr;
}

}  // namespace

extern "C" {

Result cuGetErrorName(Result, char const** name) {
    *name = "CUDA_ERROR_FAKE";
    return success;
}
Result cuGetErrorString(Result, char const** text) {
    *text = "the fake driver";
    return success;
}
Result cuInit(unsigned) { return success; }
Result cuDriverGetVersion(int* version) {
    *version = 13000;
    return success;
}
Result cuDeviceGetCount(int* count) {
    *count = 1;
    return success;
}
Result cuDeviceGet(int* device, int) {
    *device = 0;
    return success;
}
Result cuDeviceGetName(char* name, int length, int) {
    std::strncpy(name, "Fake GPU", static_cast<std::size_t>(length));
    return success;
}
Result cuDeviceGetAttribute(int* value, int attribute, int) {
    int const cc = compute_capability();
    switch (attribute) {
        case 1: *value = 1024; break;        // max threads per block
        case 5: *value = 2147483647; break;  // max grid x
        case 8: *value = 48 * 1024; break;   // shared memory per block
        case 10: *value = 32; break;         // warp size
        case 16: *value = 132; break;        // multiprocessors
        case 18: *value = 0; break;          // integrated
        case 75: *value = cc / 10; break;    // compute capability
        case 76: *value = cc % 10; break;
        case 81: *value = 228 * 1024; break;  // shared memory per multiprocessor
        case 97: *value = 227 * 1024; break;  // per block, opted in
        case 111: *value = 1024; break;       // reserved per block
        case 115: *value = 1; break;          // memory pools
        default: *value = 0;
    }
    return success;
}
Result cuDeviceTotalMem_v2(std::size_t* bytes, int) {
    *bytes = std::size_t{8} << 30;
    return success;
}
Result cuDevicePrimaryCtxRetain(void** context, int) {
    *context = context_handle;
    return success;
}
Result cuDevicePrimaryCtxRelease_v2(int) { return success; }
Result cuCtxPushCurrent_v2(void* context) {
    state().current = context;
    return success;
}
Result cuCtxPopCurrent_v2(void** context) {
    if (context) *context = state().current;
    state().current = nullptr;
    return success;
}
Result cuCtxGetCurrent(void** context) {
    *context = state().current;
    return success;
}
Result cuStreamCreate(void** stream, unsigned) {
    *stream = stream_handle;
    return success;
}
Result cuStreamDestroy_v2(void*) { return success; }
Result cuStreamSynchronize(void*) { return capturing() ? capture_unsupported : success; }
Result cuEventCreate(void** event, unsigned) {
    *event = std::malloc(1);
    return success;
}
Result cuEventDestroy_v2(void* event) {
    std::free(event);
    return success;
}
Result cuEventRecord(void*, void*) { return success; }
Result cuEventSynchronize(void*) { return success; }
// Every timed interval takes a quarter of a millisecond: RAYO_CUDA_PROFILE's sums are then counts.
Result cuEventElapsedTime(float* milliseconds, void*, void*) {
    *milliseconds = 0.25f;
    return success;
}
Result cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
    *total = std::size_t{8} << 30;
    *free = *total;
    return success;
}
Result cuDeviceGetDefaultMemPool(void** pool, int) {
    *pool = pool_handle;
    return success;
}
// CU_MEMPOOL_ATTR_*: 4 release threshold, 5 and 6 reserved (current, high), 7 and 8 used.
Result cuMemPoolSetAttribute(void*, int attribute, void* value) {
    std::uint64_t const v = *static_cast<std::uint64_t*>(value);
    std::lock_guard lock(state().mutex);
    Pool& pool = state().pool;
    switch (attribute) {
        case 4: pool.release_threshold = v; return success;
        case 6:
            if (v != 0) return invalid_value;  // a high watermark only resets
            pool.reserved_high = pool.reserved;
            return success;
        case 8:
            if (v != 0) return invalid_value;
            pool.used_high = pool.used;
            return success;
        default: return invalid_value;
    }
}
Result cuMemPoolGetAttribute(void*, int attribute, void* value) {
    std::lock_guard lock(state().mutex);
    Pool const& pool = state().pool;
    auto& out = *static_cast<std::uint64_t*>(value);
    switch (attribute) {
        case 4: out = pool.release_threshold; return success;
        case 5: out = pool.reserved; return success;
        case 6: out = pool.reserved_high; return success;
        case 7: out = pool.used; return success;
        case 8: out = pool.used_high; return success;
        default: return invalid_value;
    }
}
Result cuMemPoolTrimTo(void*, std::size_t keep) {
    std::lock_guard lock(state().mutex);
    state().pool.trim(keep);
    return success;
}
Result cuMemAllocFromPoolAsync(std::uint64_t* address, std::size_t bytes, void*, void*) {
    // 256-byte aligned, as the driver's allocations are.
    *address = reinterpret_cast<std::uintptr_t>(std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256));
    if (!*address) return 2;
    std::lock_guard lock(state().mutex);
    state().pool.allocated(*address, bytes);
    return success;
}
Result cuMemFreeAsync(std::uint64_t address, void*) {
    {
        std::lock_guard lock(state().mutex);
        state().pool.freed(address);
    }
    std::free(as_pointer(address));
    return success;
}
Result cuMemHostAlloc(void** pointer, std::size_t bytes, unsigned) {
    *pointer = std::malloc(bytes ? bytes : 1);
    return *pointer ? success : 2;
}
Result cuMemFreeHost(void* pointer) {
    std::free(pointer);
    return success;
}
Result cuMemcpyHtoDAsync_v2(std::uint64_t to, void const* from, std::size_t bytes, void*) {
    if (capturing()) return capture_unsupported;
    std::memcpy(as_pointer(to), from, bytes);
    return success;
}
Result cuMemcpyDtoHAsync_v2(void* to, std::uint64_t from, std::size_t bytes, void*) {
    if (capturing()) return capture_unsupported;
    std::memcpy(to, as_pointer(from), bytes);
    return success;
}
Result cuMemcpyDtoDAsync_v2(std::uint64_t to, std::uint64_t from, std::size_t bytes, void*) {
    if (capturing()) return capture_unsupported;
    std::memmove(as_pointer(to), as_pointer(from), bytes);
    return success;
}
Result cuMemsetD8Async(std::uint64_t to, unsigned char value, std::size_t count, void*) {
    if (capturing()) return capture_unsupported;
    std::memset(as_pointer(to), value, count);
    return success;
}
Result cuMemsetD16Async(std::uint64_t to, unsigned short value, std::size_t count, void*) {
    auto* p = static_cast<unsigned short*>(as_pointer(to));
    for (std::size_t i = 0; i < count; ++i) p[i] = value;
    return success;
}
Result cuMemsetD32Async(std::uint64_t to, unsigned value, std::size_t count, void*) {
    auto* p = static_cast<unsigned*>(as_pointer(to));
    for (std::size_t i = 0; i < count; ++i) p[i] = value;
    return success;
}
Result cuMemsetD2D32Async(std::uint64_t to, std::size_t pitch, unsigned value, std::size_t width, std::size_t height,
                          void* stream) {
    for (std::size_t row = 0; row < height; ++row) cuMemsetD32Async(to + row * pitch, value, width, stream);
    return success;
}
Result cuModuleLoadDataEx(void** module, void const* image, unsigned, int*, void**) {
    std::lock_guard lock(state().mutex);
    auto& m = state().modules.emplace_back(std::make_unique<Module>(Module{static_cast<char const*>(image)}));
    *module = m.get();
    return success;
}
Result cuModuleUnload(void*) { return success; }
Result cuModuleGetFunction(void** function, void* module, char const*) {
    std::lock_guard lock(state().mutex);
    auto& f = state().functions.emplace_back(std::make_unique<Function>(Function{static_cast<Module*>(module)}));
    *function = f.get();
    return success;
}
Result cuFuncSetAttribute(void*, int, int) { return success; }
Result cuLaunchKernel(void* function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                      void**, void**) {
    record(function, false);
    return success;
}
Result cuLaunchKernelEx(LaunchConfig const* config, void* function, void**, void**) {
    bool early = false;
    for (unsigned i = 0; i < config->attribute_count; ++i)
        early |= config->attributes[i].id == 6 && config->attributes[i].value.programmatic_stream_serialization_allowed;
    record(function, early);
    return success;
}

Result cuStreamBeginCapture_v2(void*, int mode) {
    std::lock_guard lock(state().mutex);
    if (state().capturing || mode < 0 || mode > 2) return invalid_value;
    state().capturing = new Graph;
    ++state().graphs;
    return success;
}
Result cuStreamEndCapture(void*, void** graph) {
    std::lock_guard lock(state().mutex);
    if (!state().capturing) return invalid_value;
    *graph = state().capturing;
    state().capturing = nullptr;
    return success;
}
Result cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long) {
    *exec = graph;
    return success;
}
Result cuGraphLaunch(void* exec, void*) {
    std::lock_guard lock(state().mutex);
    if (state().capturing) return capture_unsupported;
    auto const& recorded = static_cast<Graph*>(exec)->launches;
    state().launches.insert(state().launches.end(), recorded.begin(), recorded.end());
    return success;
}
Result cuGraphExecDestroy(void*) { return success; }
Result cuGraphDestroy(void* graph) {
    std::lock_guard lock(state().mutex);
    delete static_cast<Graph*>(graph);
    --state().graphs;
    return success;
}

// Checks what the real encoder checks of the fields rayo sets and writes the global address into
// the map's first word (the fake runs no kernel that would read it).
Result cuTensorMapEncodeTiled(std::uint64_t* map, int type, unsigned rank, void* address, std::uint64_t const* dims,
                              std::uint64_t const* strides, std::uint32_t const* box,
                              std::uint32_t const* element_strides, int interleave, int swizzle, int, int) {
    constexpr int element_bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2};
    if (type < 0 || type > 9 || rank == 0 || rank > 5 || interleave != 0 || swizzle < 0 || swizzle > 3 ||
        reinterpret_cast<std::uintptr_t>(map) % 64 != 0 || reinterpret_cast<std::uintptr_t>(address) % 16 != 0)
        return invalid_value;
    for (unsigned i = 0; i < rank; ++i) {
        if (dims[i] == 0 || box[i] == 0 || box[i] > 256 || element_strides[i] != 1) return invalid_value;
        if (i > 0 && strides[i - 1] % 16 != 0) return invalid_value;
    }
    unsigned const inner_bytes = box[0] * static_cast<unsigned>(element_bytes[type]);
    if (inner_bytes % 16 != 0 || (swizzle == 3 && inner_bytes > 128)) return invalid_value;
    std::lock_guard lock(state().mutex);
    map[0] = reinterpret_cast<std::uintptr_t>(address);
    ++state().tensor_maps;
    return success;
}

Result cuGetProcAddress_v2(char const* symbol, void** function, int, std::uint64_t, int* status) {
    struct Entry {
        std::string_view name;
        void* address;
    };
    static Entry const entries[] = {
        {"cuGetErrorName", reinterpret_cast<void*>(&cuGetErrorName)},
        {"cuGetErrorString", reinterpret_cast<void*>(&cuGetErrorString)},
        {"cuInit", reinterpret_cast<void*>(&cuInit)},
        {"cuDriverGetVersion", reinterpret_cast<void*>(&cuDriverGetVersion)},
        {"cuDeviceGetCount", reinterpret_cast<void*>(&cuDeviceGetCount)},
        {"cuDeviceGet", reinterpret_cast<void*>(&cuDeviceGet)},
        {"cuDeviceGetName", reinterpret_cast<void*>(&cuDeviceGetName)},
        {"cuDeviceGetAttribute", reinterpret_cast<void*>(&cuDeviceGetAttribute)},
        {"cuDeviceTotalMem", reinterpret_cast<void*>(&cuDeviceTotalMem_v2)},
        {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&cuDevicePrimaryCtxRetain)},
        {"cuDevicePrimaryCtxRelease", reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease_v2)},
        {"cuCtxPushCurrent", reinterpret_cast<void*>(&cuCtxPushCurrent_v2)},
        {"cuCtxPopCurrent", reinterpret_cast<void*>(&cuCtxPopCurrent_v2)},
        {"cuCtxGetCurrent", reinterpret_cast<void*>(&cuCtxGetCurrent)},
        {"cuStreamCreate", reinterpret_cast<void*>(&cuStreamCreate)},
        {"cuStreamDestroy", reinterpret_cast<void*>(&cuStreamDestroy_v2)},
        {"cuStreamSynchronize", reinterpret_cast<void*>(&cuStreamSynchronize)},
        {"cuEventCreate", reinterpret_cast<void*>(&cuEventCreate)},
        {"cuEventDestroy", reinterpret_cast<void*>(&cuEventDestroy_v2)},
        {"cuEventRecord", reinterpret_cast<void*>(&cuEventRecord)},
        {"cuEventSynchronize", reinterpret_cast<void*>(&cuEventSynchronize)},
        {"cuEventElapsedTime", reinterpret_cast<void*>(&cuEventElapsedTime)},
        {"cuMemGetInfo", reinterpret_cast<void*>(&cuMemGetInfo_v2)},
        {"cuDeviceGetDefaultMemPool", reinterpret_cast<void*>(&cuDeviceGetDefaultMemPool)},
        {"cuMemPoolSetAttribute", reinterpret_cast<void*>(&cuMemPoolSetAttribute)},
        {"cuMemPoolGetAttribute", reinterpret_cast<void*>(&cuMemPoolGetAttribute)},
        {"cuMemPoolTrimTo", reinterpret_cast<void*>(&cuMemPoolTrimTo)},
        {"cuMemAllocFromPoolAsync", reinterpret_cast<void*>(&cuMemAllocFromPoolAsync)},
        {"cuMemFreeAsync", reinterpret_cast<void*>(&cuMemFreeAsync)},
        {"cuMemHostAlloc", reinterpret_cast<void*>(&cuMemHostAlloc)},
        {"cuMemFreeHost", reinterpret_cast<void*>(&cuMemFreeHost)},
        {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2)},
        {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&cuMemcpyDtoHAsync_v2)},
        {"cuMemcpyDtoDAsync", reinterpret_cast<void*>(&cuMemcpyDtoDAsync_v2)},
        {"cuMemsetD8Async", reinterpret_cast<void*>(&cuMemsetD8Async)},
        {"cuMemsetD16Async", reinterpret_cast<void*>(&cuMemsetD16Async)},
        {"cuMemsetD32Async", reinterpret_cast<void*>(&cuMemsetD32Async)},
        {"cuMemsetD2D32Async", reinterpret_cast<void*>(&cuMemsetD2D32Async)},
        {"cuModuleLoadDataEx", reinterpret_cast<void*>(&cuModuleLoadDataEx)},
        {"cuModuleUnload", reinterpret_cast<void*>(&cuModuleUnload)},
        {"cuModuleGetFunction", reinterpret_cast<void*>(&cuModuleGetFunction)},
        {"cuFuncSetAttribute", reinterpret_cast<void*>(&cuFuncSetAttribute)},
        {"cuLaunchKernel", reinterpret_cast<void*>(&cuLaunchKernel)},
        {"cuLaunchKernelEx", reinterpret_cast<void*>(&cuLaunchKernelEx)},
        {"cuTensorMapEncodeTiled", reinterpret_cast<void*>(&cuTensorMapEncodeTiled)},
        {"cuStreamBeginCapture", reinterpret_cast<void*>(&cuStreamBeginCapture_v2)},
        {"cuStreamEndCapture", reinterpret_cast<void*>(&cuStreamEndCapture)},
        {"cuGraphInstantiateWithFlags", reinterpret_cast<void*>(&cuGraphInstantiateWithFlags)},
        {"cuGraphLaunch", reinterpret_cast<void*>(&cuGraphLaunch)},
        {"cuGraphExecDestroy", reinterpret_cast<void*>(&cuGraphExecDestroy)},
        {"cuGraphDestroy", reinterpret_cast<void*>(&cuGraphDestroy)},
    };
    for (auto const& e : entries)
        if (e.name == symbol) {
            *function = e.address;
            if (status) *status = 0;
            return success;
        }
    *function = nullptr;
    if (status) *status = 1;  // symbol not found
    return not_found;
}

// What the tests ask.
int rayo_fake_cuda_compute_capability() { return compute_capability(); }
int rayo_fake_cuda_launch_count() {
    std::lock_guard lock(state().mutex);
    return static_cast<int>(state().launches.size());
}
int rayo_fake_cuda_tensor_map_count() {
    std::lock_guard lock(state().mutex);
    return state().tensor_maps;
}
// Graphs captured and not yet destroyed.
int rayo_fake_cuda_graph_count() {
    std::lock_guard lock(state().mutex);
    return state().graphs;
}
int rayo_fake_cuda_module_count() {
    std::lock_guard lock(state().mutex);
    return static_cast<int>(state().modules.size());
}
// The PTX of the module whose kernel the i-th launch ran, and whether it was launched to start early.
char const* rayo_fake_cuda_launch_ptx(int i) {
    std::lock_guard lock(state().mutex);
    return state().launches.at(static_cast<std::size_t>(i)).module->ptx.c_str();
}
int rayo_fake_cuda_launch_starts_early(int i) {
    std::lock_guard lock(state().mutex);
    return state().launches.at(static_cast<std::size_t>(i)).starts_early ? 1 : 0;
}

}  // extern "C"
