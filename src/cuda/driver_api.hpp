// The slice of the CUDA driver ABI rayo uses, declared here rather than taken from cuda.h so that
// building rayo needs no CUDA toolkit, and the table of driver entry points resolved at run time
// from libcuda.so.1. Numeric values and signatures are cuda.h's (CUDA 12 and 13 agree on them).
//
// Entry points are resolved through cuGetProcAddress by their base name with an explicit CUDA
// version: the version at which the signature declared here became current (cudaTypedefs.h names
// it PFN_<name>_v<version>). Guessing suffixed names is wrong: in CUDA 13 cuCtxSynchronize_v2
// takes a context argument the old cuCtxSynchronize did not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rayo::cuda {

// Handles are opaque pointers to driver structs, as in cuda.h.
using CUdevice = int;
using CUdeviceptr = std::uint64_t;  // unsigned long long on every 64-bit target
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmemoryPool = struct CUmemPoolHandle_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

// CUstreamCaptureMode: relaxed lets the capturing thread make calls that are unsafe during a global
// capture (loading a module the first time a kernel is launched).
enum class CUstreamCaptureMode : int { global = 0, thread_local_mode = 1, relaxed = 2 };

// An int-sized enum in cuda.h; the driver may return codes this list does not name.
enum class CUresult : int {
    success = 0,
    invalid_value = 1,
    out_of_memory = 2,
    not_initialized = 3,
    deinitialized = 4,
    stub_library = 34,  // CUDA_ERROR_STUB_LIBRARY: the toolkit's link-time stubs/libcuda.so, no driver behind it
    no_device = 100,
    invalid_context = 201,
    invalid_ptx = 218,
    unsupported_ptx_version = 222,
    invalid_handle = 400,
    not_found = 500,
    not_ready = 600,
    illegal_address = 700,
    launch_out_of_resources = 701,
    launch_timeout = 702,
    context_is_destroyed = 709,
    assert_failed = 710,  // CUDA_ERROR_ASSERT
    hardware_stack_error = 714,
    illegal_instruction = 715,
    misaligned_address = 716,
    invalid_address_space = 717,
    invalid_pc = 718,
    launch_failed = 719,
    not_supported = 801,
    unknown = 999,
};

// CUdevice_attribute values rayo reads (CU_DEVICE_ATTRIBUTE_*).
enum class CUdevice_attribute : int {
    max_threads_per_block = 1,
    max_grid_dim_x = 5,
    max_shared_memory_per_block = 8,
    warp_size = 10,
    multiprocessor_count = 16,
    max_shared_memory_per_multiprocessor = 81,
    integrated = 18,
    compute_capability_major = 75,
    compute_capability_minor = 76,
    max_shared_memory_per_block_optin = 97,
    reserved_shared_memory_per_block = 111,
    memory_pools_supported = 115,
};

// CUjit_option values (CU_JIT_*). Option values travel as void*: sizes and levels by value.
enum class CUjit_option : int {
    info_log_buffer = 3,
    info_log_buffer_size_bytes = 4,
    error_log_buffer = 5,
    error_log_buffer_size_bytes = 6,
    optimization_level = 7,
    log_verbose = 12,
};

// CUmemPool_attribute values (CU_MEMPOOL_ATTR_*); the byte counts are cuuint64_t.
enum class CUmemPool_attribute : int {
    release_threshold = 4,
    reserved_mem_current = 5,
    reserved_mem_high = 6,
    used_mem_current = 7,
    used_mem_high = 8,
};

// CUfunction_attribute values (CU_FUNC_ATTRIBUTE_*).
enum class CUfunction_attribute : int {
    max_dynamic_shared_size_bytes = 8,
};

// CUdriverProcAddressQueryResult (CU_GET_PROC_ADDRESS_*).
enum class CUdriverProcAddressQueryResult : int {
    success = 0,
    symbol_not_found = 1,
    version_not_sufficient = 2,
};

inline constexpr unsigned stream_non_blocking = 0x1;                  // CU_STREAM_NON_BLOCKING
inline constexpr unsigned event_disable_timing = 0x2;                 // CU_EVENT_DISABLE_TIMING
inline constexpr std::uint64_t get_proc_address_legacy_stream = 0x1;  // CU_GET_PROC_ADDRESS_LEGACY_STREAM

// cuLaunchKernelEx's configuration, laid out as cuda.h's CUlaunchConfig and CUlaunchAttribute
// (the attribute's value is a 64-byte union there; rayo sets only one member).
enum class CUlaunchAttributeID : int { programmatic_stream_serialization = 6 };
struct CUlaunchAttribute {
    CUlaunchAttributeID id{};
    char padding[4]{};
    union Value {
        int programmatic_stream_serialization_allowed;
        alignas(8) char bytes[64];
    } value{};
};
static_assert(sizeof(CUlaunchAttribute) == 72 && offsetof(CUlaunchAttribute, value) == 8);
struct CUlaunchConfig {
    unsigned grid_x = 1, grid_y = 1, grid_z = 1;
    unsigned block_x = 1, block_y = 1, block_z = 1;
    unsigned shared_bytes = 0;
    CUstream stream = nullptr;
    CUlaunchAttribute* attributes = nullptr;
    unsigned attribute_count = 0;
};
static_assert(sizeof(CUlaunchConfig) == 56 && offsetof(CUlaunchConfig, stream) == 32 &&
              offsetof(CUlaunchConfig, attributes) == 40 && offsetof(CUlaunchConfig, attribute_count) == 48);

// cuTensorMapEncodeTiled's enums (CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle,
// CUtensorMapL2promotion, CUtensorMapFloatOOBfill) and the 128-byte CUtensorMap it writes.
enum class CUtensorMapDataType : int {
    uint8 = 0,
    uint16 = 1,
    uint32 = 2,
    int32 = 3,
    uint64 = 4,
    int64 = 5,
    float16 = 6,
    float32 = 7,
    float64 = 8,
    bfloat16 = 9
};
enum class CUtensorMapInterleave : int { none = 0 };
enum class CUtensorMapSwizzle : int { none = 0, swizzle_32b = 1, swizzle_64b = 2, swizzle_128b = 3 };
enum class CUtensorMapL2promotion : int { none = 0, l2_64b = 1, l2_128b = 2, l2_256b = 3 };
enum class CUtensorMapFloatOOBfill : int { none = 0 };  // elements outside the tensor read as zero
struct alignas(64) CUtensorMap {
    std::uint64_t opaque[16];
};

// Every driver entry point rayo calls. The table is filled once per process and never unloaded:
// static tensors are released during exit, after which the library must still be there.
struct Driver {
    int version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor, e.g. 13000

    CUresult (*cuGetErrorName)(CUresult error, char const** name) = nullptr;
    CUresult (*cuGetErrorString)(CUresult error, char const** text) = nullptr;
    CUresult (*cuInit)(unsigned flags) = nullptr;
    CUresult (*cuDriverGetVersion)(int* version) = nullptr;

    CUresult (*cuDeviceGetCount)(int* count) = nullptr;
    CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
    CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device) = nullptr;
    CUresult (*cuDeviceGetAttribute)(int* value, CUdevice_attribute attribute, CUdevice device) = nullptr;
    CUresult (*cuDeviceTotalMem)(std::size_t* bytes, CUdevice device) = nullptr;

    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;
    CUresult (*cuCtxPushCurrent)(CUcontext context) = nullptr;
    CUresult (*cuCtxPopCurrent)(CUcontext* context) = nullptr;
    CUresult (*cuCtxGetCurrent)(CUcontext* context) = nullptr;

    CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags) = nullptr;
    CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;
    CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
    CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
    CUresult (*cuEventDestroy)(CUevent event) = nullptr;
    CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
    CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
    CUresult (*cuEventElapsedTime)(float* milliseconds, CUevent start, CUevent end) = nullptr;

    CUresult (*cuMemGetInfo)(std::size_t* free, std::size_t* total) = nullptr;
    CUresult (*cuDeviceGetDefaultMemPool)(CUmemoryPool* pool, CUdevice device) = nullptr;
    CUresult (*cuMemPoolSetAttribute)(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) = nullptr;
    CUresult (*cuMemPoolGetAttribute)(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) = nullptr;
    CUresult (*cuMemPoolTrimTo)(CUmemoryPool pool, std::size_t min_bytes_to_keep) = nullptr;
    CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr* pointer, std::size_t bytes, CUmemoryPool pool,
                                        CUstream stream) = nullptr;
    CUresult (*cuMemFreeAsync)(CUdeviceptr pointer, CUstream stream) = nullptr;
    CUresult (*cuMemHostAlloc)(void** pointer, std::size_t bytes, unsigned flags) = nullptr;
    CUresult (*cuMemFreeHost)(void* pointer) = nullptr;

    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, void const* src, std::size_t bytes, CUstream stream) = nullptr;
    CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream) = nullptr;
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream) = nullptr;
    CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, std::size_t count, CUstream stream) = nullptr;
    CUresult (*cuMemsetD16Async)(CUdeviceptr dst, unsigned short value, std::size_t count, CUstream stream) = nullptr;
    CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned value, std::size_t count, CUstream stream) = nullptr;
    CUresult (*cuMemsetD2D32Async)(CUdeviceptr dst, std::size_t pitch, unsigned value, std::size_t width,
                                   std::size_t height, CUstream stream) = nullptr;

    CUresult (*cuModuleLoadDataEx)(CUmodule* module, void const* image, unsigned option_count, CUjit_option* options,
                                   void** option_values) = nullptr;
    CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
    CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, char const* name) = nullptr;
    CUresult (*cuFuncSetAttribute)(CUfunction function, CUfunction_attribute attribute, int value) = nullptr;
    CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                               unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream,
                               void** params, void** extra) = nullptr;
    // Optional (CUDA 11.6+): nullptr where the driver lacks it, and launches that would use it
    // are made with cuLaunchKernel.
    CUresult (*cuLaunchKernelEx)(CUlaunchConfig const* config, CUfunction function, void** params,
                                 void** extra) = nullptr;
    // Optional (CUDA 10+; instantiation with flags 11.4+): without them rayo::capture on CUDA keeps
    // the list of ops and replays them one by one.
    CUresult (*cuStreamBeginCapture)(CUstream stream, CUstreamCaptureMode mode) = nullptr;
    CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph) = nullptr;
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph, unsigned long long flags) = nullptr;
    CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream) = nullptr;
    CUresult (*cuGraphExecDestroy)(CUgraphExec exec) = nullptr;
    CUresult (*cuGraphDestroy)(CUgraph graph) = nullptr;
    // Optional (CUDA 12.0+): without it the kernels that copy tiles with the TMA are not chosen.
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap* map, CUtensorMapDataType type, unsigned rank, void* address,
                                       std::uint64_t const* dims, std::uint64_t const* strides,
                                       std::uint32_t const* box, std::uint32_t const* element_strides,
                                       CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                       CUtensorMapL2promotion l2_promotion, CUtensorMapFloatOOBfill fill) = nullptr;

    // The process's driver: libcuda.so.1 opened, every entry point above resolved and cuInit(0)
    // done, on the first call. Throws rayo::DeviceError saying what is missing (the library, an
    // entry point, or a device, as cuInit reports it); later calls throw the same.
    [[nodiscard]] static Driver const& get();
    // The loaded driver, or nullptr when get() has not succeeded (never loads, never throws).
    [[nodiscard]] static Driver const* loaded() noexcept;
};

// "CUDA_ERROR_OUT_OF_MEMORY", from the driver when it is loaded ("CUresult 2" otherwise).
[[nodiscard]] std::string error_name(CUresult result);
// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", from the driver when it is loaded.
[[nodiscard]] std::string describe(CUresult result);

// Throws for a failed call: rayo::OutOfMemory for CUDA_ERROR_OUT_OF_MEMORY, rayo::DeviceError
// carrying the code and its name for anything else. `what` names the device and the call, as
// "cuda:0: cuStreamCreate"; the message is "<what> failed: <name> (<code>): <driver's text>".
// Calls made per operation test the result before building `what`, so a message costs nothing
// until something fails; check() is for the rest.
[[noreturn]] void throw_error(CUresult result, std::string_view what);
inline void check(CUresult result, std::string_view what) {
    if (result != CUresult::success) throw_error(result, what);
}

}  // namespace rayo::cuda
