// Tensor<T>: a shape and a view into reference-counted storage on one device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rayo/detail/storage.hpp"
#include "rayo/device.hpp"
#include "rayo/dtype.hpp"
#include "rayo/error.hpp"
#include "rayo/export.hpp"
#include "rayo/shape.hpp"

namespace rayo {

template <Element T>
class Tensor;

namespace detail {
struct TensorAccess;
}

// Tensors are contiguous and row-major. Copying a Tensor copies the handle, not the data: use
// clone() or to(device) for a deep copy. Views (reshape, slice) share storage.
// For the block types (q4_k, ...) the shape counts values, one stored element holds
// `values_per_element` (256, 32 for q8_0 / q4_0) of them along the last axis, and that axis must be
// a multiple of it.
template <Element T>
class RAYO_API Tensor {
public:
    using value_type = T;
    static constexpr std::size_t values_per_element = block_elements(dtype_of<T>);

    // Uploads a copy of host data; data.size() must equal the shape's element count (its block
    // count for the block types).
    static Tensor from(std::span<T const> data, Shape shape, Device device = Device::cpu()) {
        check_block_shape(shape);
        if (data.size() != shape.numel() / values_per_element)
            throw ShapeError("Tensor::from: " + std::to_string(data.size()) + " host elements do not match shape " +
                             shape.to_string() + " (" + std::to_string(shape.numel() / values_per_element) +
                             (values_per_element > 1 ? " blocks)" : " elements)"));
        Tensor t = empty(std::move(shape), device);
        if (!data.empty()) t.storage_->upload(0, data.data(), data.size_bytes());
        return t;
    }
    // A 1-D tensor holding a copy of `data`.
    static Tensor from(std::span<T const> data, Device device = Device::cpu()) {
        return from(data, Shape{data.size() * values_per_element}, device);
    }
    // Uninitialised contents.
    static Tensor empty(Shape shape, Device device = Device::cpu()) {
        check_block_shape(shape);
        auto storage = std::make_shared<detail::Storage>(device, bytes_for(dtype_of<T>, shape.numel()));
        return Tensor(std::move(storage), 0, std::move(shape));
    }
    static Tensor full(Shape shape, T value, Device device = Device::cpu()) requires(values_per_element == 1) {
        Tensor t = empty(std::move(shape), device);
        if (t.numel()) t.storage_->fill(0, t.bytes(), &value, sizeof(T));
        return t;
    }
    // All bytes zero (for the block types: zero scales, so every value is 0).
    static Tensor zeros(Shape shape, Device device = Device::cpu()) {
        Tensor t = empty(std::move(shape), device);
        std::uint8_t const zero = 0;
        if (t.numel()) t.storage_->fill(0, t.bytes(), &zero, 1);
        return t;
    }

    [[nodiscard]] Shape const& shape() const noexcept { return shape_; }
    [[nodiscard]] std::size_t rank() const noexcept { return shape_.rank(); }
    [[nodiscard]] std::size_t numel() const noexcept { return shape_.numel(); }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_for(dtype_of<T>, numel()); }
    [[nodiscard]] static constexpr DType dtype() noexcept { return dtype_of<T>; }
    [[nodiscard]] Device device() const noexcept { return storage_->device(); }

    // Deep copy onto `device` (the same device gives an independent copy).
    [[nodiscard]] Tensor to(Device device) const {
        Tensor t = empty(shape_, device);
        if (numel()) detail::Storage::copy(*storage_, offset_, *t.storage_, 0, bytes());
        return t;
    }
    [[nodiscard]] Tensor clone() const { return to(device()); }

    // Waits for pending work on the device and downloads the elements (the blocks, for block types).
    [[nodiscard]] std::vector<T> to_vector() const {
        std::vector<T> host(numel() / values_per_element);
        if (!host.empty()) storage_->download(offset_, host.data(), bytes());
        return host;
    }
    // The single element of a one-element tensor.
    [[nodiscard]] T item() const requires(values_per_element == 1) {
        if (numel() != 1)
            throw ShapeError("item() needs a tensor with exactly one element, got shape " + shape_.to_string());
        T value{};
        storage_->download(offset_, &value, sizeof(T));
        return value;
    }

    // Same storage, new shape with the same element count; one dimension may be -1 (inferred).
    [[nodiscard]] Tensor reshape(std::vector<std::int64_t> dims) const {
        std::size_t inferred = dims.size();
        std::size_t known = 1;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            if (dims[i] == -1 && inferred == dims.size())
                inferred = i;
            else if (dims[i] < 0)
                throw ShapeError("reshape of " + shape_.to_string() + ": invalid dimension " + std::to_string(dims[i]));
            else
                known *= static_cast<std::size_t>(dims[i]);
        }
        if (inferred != dims.size()) {
            if (known == 0 || numel() % known != 0)
                throw ShapeError("reshape of " + shape_.to_string() + " (" + std::to_string(numel()) +
                                 " elements): cannot infer the -1 dimension");
            dims[inferred] = static_cast<std::int64_t>(numel() / known);
        }
        Shape shape(std::move(dims));
        check_block_shape(shape);
        if (shape.numel() != numel())
            throw ShapeError("reshape of " + shape_.to_string() + " (" + std::to_string(numel()) + " elements) to " +
                             shape.to_string() + " (" + std::to_string(shape.numel()) + " elements)");
        return Tensor(storage_, offset_, std::move(shape));
    }
    [[nodiscard]] Tensor reshape(std::initializer_list<Dim> dims) const {
        std::vector<std::int64_t> v;
        for (Dim d : dims) {
            if (d.overflowed()) throw ShapeError("reshape: dimension does not fit in a 64-bit signed integer");
            v.push_back(d.value());
        }
        return reshape(std::move(v));
    }

    // Rows [begin, end) of the first axis, sharing storage.
    [[nodiscard]] Tensor slice(std::int64_t begin, std::int64_t end) const {
        if (rank() == 0) throw ShapeError("slice of a rank-0 tensor");
        std::int64_t const rows = shape_[0];
        if (begin < 0 || end < begin || end > rows)
            throw ShapeError("slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                             ") is out of range for shape " + shape_.to_string());
        std::vector<std::int64_t> dims(shape_.dims().begin(), shape_.dims().end());
        std::size_t const row_elems = rows ? numel() / static_cast<std::size_t>(rows) : 0;
        dims[0] = end - begin;
        Shape shape(std::move(dims));
        if (values_per_element > 1 && rank() == 1)
            throw ShapeError("slice of " + std::string(to_string(dtype())) + " shape " + shape_.to_string() +
                             ": a 1-D block tensor cannot be split inside its blocks");
        return Tensor(storage_, offset_ + bytes_for(dtype(), static_cast<std::size_t>(begin) * row_elems),
                      std::move(shape));
    }
    // Row i of the first axis, with that axis removed.
    [[nodiscard]] Tensor operator[](std::int64_t i) const {
        if (rank() == 0) throw ShapeError("index of a rank-0 tensor");
        if (i < 0 || i >= shape_[0])
            throw ShapeError("index " + std::to_string(i) + " is out of range for shape " + shape_.to_string());
        Tensor row = slice(i, i + 1);
        std::vector<std::int64_t> dims(shape_.dims().begin() + 1, shape_.dims().end());
        return Tensor(row.storage_, row.offset_, Shape(std::move(dims)));
    }

    // True when both tensors view the same bytes of the same storage.
    [[nodiscard]] bool same_storage(Tensor const& other) const noexcept {
        return storage_ == other.storage_ && offset_ == other.offset_;
    }

private:
    static void check_block_shape(Shape const& shape) {
        if constexpr (values_per_element > 1) {
            if (shape.rank() == 0 || shape[shape.rank() - 1] % static_cast<std::int64_t>(values_per_element) != 0)
                throw ShapeError(std::string(to_string(dtype_of<T>)) + " tensor of shape " + shape.to_string() +
                                 ": the last dimension must be a multiple of " + std::to_string(values_per_element));
        }
    }

    Tensor(std::shared_ptr<detail::Storage> storage, std::size_t offset, Shape shape)
        : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)) {}
    friend struct detail::TensorAccess;

    std::shared_ptr<detail::Storage> storage_;
    std::size_t offset_ = 0;  // in bytes
    Shape shape_;
};

namespace detail {
// How the op layer reaches a tensor's storage without making it public API.
struct RAYO_API TensorAccess {
    template <class T>
    static Storage& storage(Tensor<T> const& t) noexcept {
        return *t.storage_;
    }
    template <class T>
    static std::size_t offset(Tensor<T> const& t) noexcept {
        return t.offset_;
    }
    // A tensor over `storage` from byte `offset` (rayo::from_native_memory, rayo::from_dlpack).
    template <class T>
    static Tensor<T> make(std::shared_ptr<Storage> storage, std::size_t offset, Shape shape) {
        return Tensor<T>(std::move(storage), offset, std::move(shape));
    }
};
}  // namespace detail

}  // namespace rayo
