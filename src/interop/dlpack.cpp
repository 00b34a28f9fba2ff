// rayo/dlpack.hpp over DLPack's C structs (dlpack/dlpack.h, DLPack 0.6 or newer): a tensor's
// memory described as a DLManagedTensor, and a DLManagedTensor's memory adopted as a tensor
// through from_native_memory, its deleter as the release callback.
#include "rayo/dlpack.hpp"

#include <dlpack/dlpack.h>

#include <memory>
#include <string>
#include <vector>

#include "rayo/error.hpp"

namespace rayo::detail {

namespace {

// What a DLManagedTensor made by to_dlpack owns: its shape and a reference to the tensor's memory.
struct Exported {
    DLManagedTensor managed{};
    std::vector<std::int64_t> shape;
    std::shared_ptr<Storage> storage;
    std::size_t offset = 0;
};

void delete_exported(DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); }

DLDataType dl_type(DType dtype, char const* what) {
    switch (dtype) {
        case DType::f32: return {kDLFloat, 32, 1};
        case DType::f16: return {kDLFloat, 16, 1};
        case DType::bf16: return {kDLBfloat, 16, 1};
        case DType::i32: return {kDLInt, 32, 1};
        case DType::i64: return {kDLInt, 64, 1};
        default:
            throw Unsupported(std::string(what) + ": DLPack has no type for " + std::string(to_string(dtype)) +
                              " blocks (dequantize first, or pass the bytes as a tensor of another type)");
    }
}

std::string describe(DLDataType t) {
    std::string const code = t.code == kDLFloat    ? "float"
                             : t.code == kDLBfloat ? "bfloat"
                             : t.code == kDLInt    ? "int"
                             : t.code == kDLUInt   ? "uint"
                                                   : "code " + std::to_string(t.code);
    return code + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

// The CUDA device whose driver ordinal is `ordinal`.
Device cuda_device(int ordinal) {
    for (Device d : Device::all())
        if (d.kind() == DeviceKind::cuda && cuda_handles(d).device == ordinal) return d;
    throw Error("from_dlpack: no CUDA device with ordinal " + std::to_string(ordinal) + " in this process");
}

Device device_of(DLDevice d) {
    switch (d.device_type) {
        case kDLCPU:
        case kDLCUDAHost: return Device::cpu();
        case kDLCUDA:
        case kDLCUDAManaged: return cuda_device(d.device_id);
        case kDLVulkan: return Device::parse("vulkan:" + std::to_string(d.device_id));
        default:
            throw Unsupported(
                "from_dlpack: DLPack device type " + std::to_string(static_cast<int>(d.device_type)) +
                " is not a device rayo runs on (kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged, kDLVulkan)");
    }
}

DLDevice dl_device(Device device) {
    switch (device.kind()) {
        case DeviceKind::cpu: return {kDLCPU, 0};
        case DeviceKind::cuda: return {kDLCUDA, cuda_handles(device).device};
        case DeviceKind::vulkan: return {kDLVulkan, device.index()};
    }
    return {kDLCPU, 0};
}

// The dims of a compact row-major DLTensor; rayo::Error for any other layout.
std::vector<std::int64_t> row_major_dims(DLTensor const& t) {
    if (t.ndim < 0) throw ShapeError("from_dlpack: ndim " + std::to_string(t.ndim));
    if (t.ndim > 0 && !t.shape) throw ShapeError("from_dlpack: a null shape for ndim " + std::to_string(t.ndim));
    std::vector<std::int64_t> dims(t.shape, t.shape + t.ndim);
    for (std::int64_t d : dims)
        if (d < 0) throw ShapeError("from_dlpack: a negative dimension, " + std::to_string(d));
    if (!t.strides) return dims;
    std::int64_t expected = 1;
    for (int axis = t.ndim - 1; axis >= 0; --axis) {
        if (dims[axis] != 1 && t.strides[axis] != expected)
            throw ShapeError("from_dlpack: axis " + std::to_string(axis) + " has stride " +
                             std::to_string(t.strides[axis]) + ", not the row-major " + std::to_string(expected) +
                             " (rayo tensors are contiguous: copy it first, e.g. numpy.ascontiguousarray)");
        expected *= dims[axis];
    }
    return dims;
}

}  // namespace

DLManagedTensor* to_dlpack(Storage const& storage, std::size_t offset, DType dtype, Shape const& shape) {
    DLDataType const type = dl_type(dtype, "to_dlpack");
    Device const device = storage.device();
    device.synchronize();
    auto exported = std::make_unique<Exported>();
    exported->shape.assign(shape.dims().begin(), shape.dims().end());
    exported->storage = std::const_pointer_cast<Storage>(storage.shared_from_this());
    exported->offset = offset;
    NativeMemory const memory = native_memory(storage, offset, bytes_for(dtype, shape.numel()));
    DLTensor& t = exported->managed.dl_tensor;
    t.data = reinterpret_cast<void*>(memory.handle);
    t.byte_offset = memory.offset;  // Vulkan's offset in the VkBuffer; 0 elsewhere
    t.device = dl_device(device);
    t.ndim = static_cast<std::int32_t>(shape.rank());
    t.dtype = type;
    t.shape = exported->shape.data();
    t.strides = nullptr;
    exported->managed.manager_ctx = exported.get();
    exported->managed.deleter = delete_exported;
    return &exported.release()->managed;
}

DLPackView from_dlpack(DLManagedTensor* managed, DType dtype, Shape& shape) {
    if (!managed) throw Error("from_dlpack: a null DLManagedTensor");
    auto const release = [managed] {
        if (managed->deleter) managed->deleter(managed);
    };
    try {
        DLTensor const& t = managed->dl_tensor;
        DLDataType const want = dl_type(dtype, "from_dlpack");
        if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes)
            throw DTypeError("from_dlpack: the DLPack tensor holds " + describe(t.dtype) + ", not " +
                             std::string(to_string(dtype)) + " (" + describe(want) + ")");
        Shape dims(row_major_dims(t));
        if (managed->deleter == delete_exported) {  // one of rayo's own: a view of its tensor
            auto const* exported = static_cast<Exported const*>(managed->manager_ctx);
            DLPackView view{exported->storage, exported->offset};
            release();
            shape = std::move(dims);
            return view;
        }
        Device const device = device_of(t.device);
        NativeMemory memory{device.kind(), reinterpret_cast<std::uintptr_t>(t.data), 0, bytes_for(dtype, dims.numel())};
        if (device.kind() == DeviceKind::vulkan)
            memory.offset = t.byte_offset;
        else
            memory.handle += t.byte_offset;
        DLPackView view{adopt_native_memory(device, memory, dtype, dims, release), 0};
        shape = std::move(dims);
        return view;
    } catch (...) {
        release();
        throw;
    }
}

}  // namespace rayo::detail
