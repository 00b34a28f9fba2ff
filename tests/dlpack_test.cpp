// rayo/dlpack.hpp on every device present (the CPU; lavapipe in CI): a tensor's DLManagedTensor
// describes its memory (device, type, shape, compact strides, data and offset), comes back as a
// view of the same tensor, and a foreign DLManagedTensor becomes a tensor without a copy whose
// deleter runs once, when the last tensor over it is gone, or at once when it is refused (a type
// other than T's, a strided layout, a device rayo does not run on). NumPy and PyTorch as the other
// side: tests/dlpack/check_dlpack.py.
#include "support/test_support.hpp"

#include <rayo/dlpack.hpp>
#include <rayo/native.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rayo::test {
namespace {

// A DLManagedTensor over a std::vector, as another library would hand one over.
struct Foreign {
    DLManagedTensor managed{};
    std::vector<float> values;
    std::vector<std::int64_t> shape, strides;
    int* deleted = nullptr;

    Foreign(std::vector<float> v, std::vector<std::int64_t> dims, int* counter)
        : values(std::move(v)), shape(std::move(dims)), deleted(counter) {
        managed.dl_tensor.data = values.data();
        managed.dl_tensor.device = {kDLCPU, 0};
        managed.dl_tensor.ndim = static_cast<std::int32_t>(shape.size());
        managed.dl_tensor.dtype = {kDLFloat, 32, 1};
        managed.dl_tensor.shape = shape.data();
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) { ++*static_cast<Foreign*>(self->manager_ctx)->deleted; };
    }
};

TEST(DLPack, ATensorsDLManagedTensorDescribesItsMemoryAndComesBackAsAView) {
    for (Device device : Device::all()) {
        SCOPED_TRACE(device.id());
        auto const t = Tensor<float>::from(random_floats(6 * 5, fresh_seed()), {6, 5}, device);
        auto const rows = t.slice(2, 5);
        DLManagedTensor* const m = to_dlpack(rows);
        DLTensor const& d = m->dl_tensor;
        NativeMemory const memory = native_memory(rows);
        EXPECT_EQ(d.device.device_type, device.kind() == DeviceKind::cpu    ? kDLCPU
                                        : device.kind() == DeviceKind::cuda ? kDLCUDA
                                                                            : kDLVulkan);
        EXPECT_EQ(d.dtype.code, kDLFloat);
        EXPECT_EQ(d.dtype.bits, 32);
        EXPECT_EQ(d.dtype.lanes, 1);
        ASSERT_EQ(d.ndim, 2);
        EXPECT_EQ(d.shape[0], 3);
        EXPECT_EQ(d.shape[1], 5);
        EXPECT_EQ(d.strides, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d.data), memory.handle);
        EXPECT_EQ(d.byte_offset, memory.offset);
        auto const back = from_dlpack<float>(m);  // rayo's own: a view, the DLManagedTensor deleted
        EXPECT_TRUE(back.same_storage(rows));
        EXPECT_EQ(back.shape(), rows.shape());
        EXPECT_EQ(back.to_vector(), rows.to_vector());
        // A DLManagedTensor the consumer deletes unused lets go of the memory too.
        DLManagedTensor* const unused = to_dlpack(t);
        unused->deleter(unused);
    }
}

TEST(DLPack, AForeignTensorIsUsedInPlaceAndItsDeleterRunsOnce) {
    int deleted = 0;
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<float> const values = random_floats(4 * 3, seed, -3.0f, 3.0f);
    Foreign foreign(values, {4, 3}, &deleted);
    {
        auto t = std::optional(from_dlpack<float>(&foreign.managed));
        EXPECT_EQ(native_memory(*t).handle, reinterpret_cast<std::uintptr_t>(foreign.values.data()));
        add_into(*t, *t, *t);
        auto const last = t->slice(3, 4);
        t.reset();
        EXPECT_EQ(deleted, 0);
        for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(foreign.values[i], 2 * values[i]) << i;
        EXPECT_EQ(last.to_vector(), std::vector<float>(foreign.values.end() - 3, foreign.values.end()));
    }
    EXPECT_EQ(deleted, 1);
    // Row-major strides given explicitly, and a size-1 axis with any stride, are compact too.
    foreign.strides = {3, 1};
    foreign.managed.dl_tensor.strides = foreign.strides.data();
    EXPECT_EQ(from_dlpack<float>(&foreign.managed).numel(), 12u);
    foreign.shape = {1, 12};
    foreign.strides = {99, 1};
    EXPECT_EQ(from_dlpack<float>(&foreign.managed).shape(), (Shape{1, 12}));
    EXPECT_EQ(deleted, 3);
}

TEST(DLPack, RefusedTensorsAreDeletedAndNamed) {
    int deleted = 0;
    Foreign wrong_type({1, 2, 3, 4}, {4}, &deleted);
    wrong_type.managed.dl_tensor.dtype = {kDLFloat, 64, 1};
    expect_error([&] { (void)from_dlpack<float>(&wrong_type.managed); }, "holds float64, not f32 (float32)");
    Foreign strided({1, 2, 3, 4}, {2, 2}, &deleted);
    strided.strides = {1, 2};  // column-major
    strided.managed.dl_tensor.strides = strided.strides.data();
    expect_error([&] { (void)from_dlpack<float>(&strided.managed); }, "axis 1 has stride 2, not the row-major 1");
    Foreign elsewhere({1, 2}, {2}, &deleted);
    elsewhere.managed.dl_tensor.device = {kDLOpenCL, 0};
    expect_error([&] { (void)from_dlpack<float>(&elsewhere.managed); }, "DLPack device type 4 is not a device");
    EXPECT_EQ(deleted, 3);
    expect_error([] { (void)from_dlpack<float>(nullptr); }, "a null DLManagedTensor");
    auto const blocks = Tensor<q4_k>::zeros({1, 256});
    expect_error([&] { (void)to_dlpack(blocks); }, "DLPack has no type for q4_k blocks");
    auto const ints = Tensor<std::int32_t>::zeros({2});
    DLManagedTensor* const m = to_dlpack(ints);
    expect_error([&] { (void)from_dlpack<float>(m); }, "holds int32, not f32");  // and deleted
}

}  // namespace
}  // namespace rayo::test
