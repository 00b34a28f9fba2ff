#include "cuda/driver_api.hpp"

#include <dlfcn.h>

#include <atomic>
#include <memory>
#include <string>

#include "rayo/error.hpp"

namespace rayo::cuda {

namespace {

// cuGetProcAddress as exported since CUDA 12 (cuGetProcAddress_v2), and the CUDA 11.3 form without
// the status argument, used only when a driver older than 12.0 lacks the first.
using GetProcAddressV2 = CUresult (*)(char const* symbol, void** function, int cuda_version, std::uint64_t flags,
                                      CUdriverProcAddressQueryResult* status);
using GetProcAddressV1 = CUresult (*)(char const* symbol, void** function, int cuda_version, std::uint64_t flags);

std::atomic<Driver const*> loaded_driver{nullptr};

// After these the context is corrupted: every later call on it fails the same way.
bool is_sticky(CUresult result) noexcept {
    switch (result) {
        case CUresult::illegal_address:
        case CUresult::assert_failed:
        case CUresult::hardware_stack_error:
        case CUresult::illegal_instruction:
        case CUresult::misaligned_address:
        case CUresult::invalid_address_space:
        case CUresult::invalid_pc:
        case CUresult::launch_failed: return true;
        default: return false;
    }
}

class EntryPointResolver {
public:
    explicit EntryPointResolver(void* library) {
        v2_ = reinterpret_cast<GetProcAddressV2>(dlsym(library, "cuGetProcAddress_v2"));
        if (!v2_) v1_ = reinterpret_cast<GetProcAddressV1>(dlsym(library, "cuGetProcAddress"));
        if (!v2_ && !v1_)
            throw DeviceError(
                "cuda: libcuda.so.1 exports neither cuGetProcAddress_v2 nor cuGetProcAddress "
                "(the driver predates CUDA 11.3)");
    }

    // `version`: the CUDA version whose signature of `name` the slot's type declares.
    template <class Function>
    void operator()(Function& slot, char const* name, int version) const {
        void* address = nullptr;
        CUdriverProcAddressQueryResult status = CUdriverProcAddressQueryResult::success;
        CUresult const result = query(name, version, address, status);
        if (result != CUresult::success || !address) {
            std::string why = "cuGetProcAddress returned " + std::to_string(static_cast<int>(result));
            if (status == CUdriverProcAddressQueryResult::symbol_not_found) why = "symbol not found";
            if (status == CUdriverProcAddressQueryResult::version_not_sufficient) why = "driver too old";
            throw DeviceError("cuda: libcuda.so.1 has no " + std::string(name) + " as of CUDA " +
                                  std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + " (" +
                                  why + ")",
                              static_cast<int>(result));
        }
        slot = reinterpret_cast<Function>(address);
    }
    // The same for an entry point rayo can do without: the slot stays nullptr where it is missing.
    template <class Function>
    void optional(Function& slot, char const* name, int version) const noexcept {
        void* address = nullptr;
        CUdriverProcAddressQueryResult status = CUdriverProcAddressQueryResult::success;
        slot =
            query(name, version, address, status) == CUresult::success ? reinterpret_cast<Function>(address) : nullptr;
    }

private:
    CUresult query(char const* name, int version, void*& address, CUdriverProcAddressQueryResult& status) const {
        return v2_ ? v2_(name, &address, version, get_proc_address_legacy_stream, &status)
                   : v1_(name, &address, version, get_proc_address_legacy_stream);
    }

    GetProcAddressV2 v2_ = nullptr;
    GetProcAddressV1 v1_ = nullptr;
};

std::unique_ptr<Driver> load() {
    // Never closed: see Driver.
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        char const* why = dlerror();
        throw DeviceError(std::string("cuda: cannot open libcuda.so.1 (no NVIDIA driver): ") + (why ? why : "?"));
    }
    auto d = std::make_unique<Driver>();
    EntryPointResolver const resolve(library);
    // Versions are those of cudaTypedefs.h's PFN_<name>_v<version> for the signatures in driver_api.hpp.
    resolve(d->cuGetErrorName, "cuGetErrorName", 6000);
    resolve(d->cuGetErrorString, "cuGetErrorString", 6000);
    resolve(d->cuInit, "cuInit", 2000);
    resolve(d->cuDriverGetVersion, "cuDriverGetVersion", 2020);
    resolve(d->cuDeviceGetCount, "cuDeviceGetCount", 2000);
    resolve(d->cuDeviceGet, "cuDeviceGet", 2000);
    resolve(d->cuDeviceGetName, "cuDeviceGetName", 2000);
    resolve(d->cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000);
    resolve(d->cuDeviceTotalMem, "cuDeviceTotalMem", 3020);
    resolve(d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000);
    resolve(d->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 11000);
    resolve(d->cuCtxPushCurrent, "cuCtxPushCurrent", 4000);
    resolve(d->cuCtxPopCurrent, "cuCtxPopCurrent", 4000);
    resolve(d->cuCtxGetCurrent, "cuCtxGetCurrent", 4000);
    resolve(d->cuStreamCreate, "cuStreamCreate", 2000);
    resolve(d->cuStreamDestroy, "cuStreamDestroy", 4000);
    resolve(d->cuStreamSynchronize, "cuStreamSynchronize", 2000);
    resolve(d->cuEventCreate, "cuEventCreate", 2000);
    resolve(d->cuEventDestroy, "cuEventDestroy", 4000);
    resolve(d->cuEventRecord, "cuEventRecord", 2000);
    resolve(d->cuEventSynchronize, "cuEventSynchronize", 2000);
    resolve(d->cuEventElapsedTime, "cuEventElapsedTime", 2000);
    resolve(d->cuMemGetInfo, "cuMemGetInfo", 3020);
    resolve(d->cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 11020);
    resolve(d->cuMemPoolSetAttribute, "cuMemPoolSetAttribute", 11020);
    resolve(d->cuMemPoolGetAttribute, "cuMemPoolGetAttribute", 11020);
    resolve(d->cuMemPoolTrimTo, "cuMemPoolTrimTo", 11020);
    resolve(d->cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020);
    resolve(d->cuMemFreeAsync, "cuMemFreeAsync", 11020);
    resolve(d->cuMemHostAlloc, "cuMemHostAlloc", 2020);
    resolve(d->cuMemFreeHost, "cuMemFreeHost", 2000);
    resolve(d->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020);
    resolve(d->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", 3020);
    resolve(d->cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3020);
    resolve(d->cuMemsetD8Async, "cuMemsetD8Async", 3020);
    resolve(d->cuMemsetD16Async, "cuMemsetD16Async", 3020);
    resolve(d->cuMemsetD32Async, "cuMemsetD32Async", 3020);
    resolve(d->cuMemsetD2D32Async, "cuMemsetD2D32Async", 3020);
    resolve(d->cuModuleLoadDataEx, "cuModuleLoadDataEx", 2010);
    resolve(d->cuModuleUnload, "cuModuleUnload", 2000);
    resolve(d->cuModuleGetFunction, "cuModuleGetFunction", 2000);
    resolve(d->cuFuncSetAttribute, "cuFuncSetAttribute", 9000);
    resolve(d->cuLaunchKernel, "cuLaunchKernel", 4000);
    resolve.optional(d->cuLaunchKernelEx, "cuLaunchKernelEx", 11060);
    resolve.optional(d->cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", 12000);
    resolve.optional(d->cuStreamBeginCapture, "cuStreamBeginCapture", 10010);
    resolve.optional(d->cuStreamEndCapture, "cuStreamEndCapture", 10000);
    resolve.optional(d->cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040);
    resolve.optional(d->cuGraphLaunch, "cuGraphLaunch", 10000);
    resolve.optional(d->cuGraphExecDestroy, "cuGraphExecDestroy", 10000);
    resolve.optional(d->cuGraphDestroy, "cuGraphDestroy", 10000);

    if (d->cuDriverGetVersion(&d->version) != CUresult::success) d->version = 0;
    // cuInit fails with CUDA_ERROR_NO_DEVICE on a machine with the driver but no GPU.
    if (CUresult const result = d->cuInit(0); result != CUresult::success) {
        char const* name = nullptr;
        char const* text = nullptr;
        if (d->cuGetErrorName(result, &name) != CUresult::success) name = nullptr;
        if (d->cuGetErrorString(result, &text) != CUresult::success) text = nullptr;
        std::string const name_text = name ? name : "CUresult " + std::to_string(static_cast<int>(result));
        throw DeviceError("cuda: cuInit failed (driver " + std::to_string(d->version) + "): " + name_text + " (" +
                              std::to_string(static_cast<int>(result)) + ")" + (text ? std::string(": ") + text : ""),
                          static_cast<int>(result), name_text);
    }
    return d;
}

struct LoadOutcome {
    std::unique_ptr<Driver> driver;
    std::string error;
    long long code = 0;
    std::string code_name;
};

LoadOutcome load_once() {
    LoadOutcome out;
    try {
        out.driver = load();
    } catch (DeviceError const& e) {
        out.error = e.what();
        out.code = e.code();
        out.code_name = e.code_name();
    }
    return out;
}

}  // namespace

Driver const& Driver::get() {
    static LoadOutcome const outcome = [] {
        LoadOutcome o = load_once();
        if (o.driver) loaded_driver.store(o.driver.get(), std::memory_order_release);
        return o;
    }();
    if (!outcome.driver) throw DeviceError(outcome.error, outcome.code, outcome.code_name);
    return *outcome.driver;
}

Driver const* Driver::loaded() noexcept { return loaded_driver.load(std::memory_order_acquire); }

std::string error_name(CUresult result) {
    char const* name = nullptr;
    if (Driver const* d = Driver::loaded())
        if (d->cuGetErrorName(result, &name) != CUresult::success) name = nullptr;
    return name ? std::string(name) : "CUresult " + std::to_string(static_cast<int>(result));
}

std::string describe(CUresult result) {
    std::string out = error_name(result) + " (" + std::to_string(static_cast<int>(result)) + ")";
    char const* text = nullptr;
    if (Driver const* d = Driver::loaded())
        if (d->cuGetErrorString(result, &text) == CUresult::success && text) out += std::string(": ") + text;
    return out;
}

void throw_error(CUresult result, std::string_view what) {
    std::string message = std::string(what) + " failed: " + describe(result);
    if (is_sticky(result))
        message += " (the device's context cannot be used after this error: restart the process to use it again)";
    if (result == CUresult::out_of_memory) throw OutOfMemory(message);
    throw DeviceError(message, static_cast<int>(result), error_name(result));
}

}  // namespace rayo::cuda
