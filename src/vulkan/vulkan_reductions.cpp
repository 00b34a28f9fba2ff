// Reductions (sum, mean, max, min, argmax, argmin over [outer, extent, inner]) and dot on the
// Vulkan backend: shaders/reduce.comp or reduce_subgroup.comp. Long extents are split into chunks
// reduced by separate workgroups (or invocations) into a scratch buffer of partials, which a
// second dispatch combines in chunk order: deterministic, no atomics.
#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "rayo/error.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

using detail::TensorView;

namespace {

// Mirrors the push constants of shaders/reduce_body.glsl.
struct ReducePush {
    std::uint32_t outputs = 0, extent = 0, inner = 0, chunks = 1, chunk_len = 0;
    std::uint32_t x_offset = 0, y_offset = 0, out_offset = 0, mean = 0;
};

enum Mode : std::uint32_t { rows_mode = 0, columns_mode = 1, combine_mode = 2 };

constexpr std::size_t partial_bytes = 16;           // struct Partial in the shader
constexpr std::size_t elements_per_group = 4096;    // MODE 0: a chunk per workgroup of this many elements
constexpr std::size_t elements_per_thread = 64;     // MODE 1: a chunk per invocation
constexpr std::size_t max_partials = 65536;         // bounds the scratch buffer (1 MiB)
constexpr std::size_t max_chunks = 1024;            // the combine pass reads <= 4 partials per invocation

std::uint32_t u32(std::size_t v, char const* what) {
    if (v > 0xffffffffu) throw Unsupported(std::string("vulkan: reduction ") + what + " exceeds 2^32");
    return static_cast<std::uint32_t>(v);
}

}  // namespace

void VulkanBackend::reduce(detail::ReduceOp op, detail::ReduceShape shape, bool mean, TensorView const& in,
                           TensorView const& out) {
    reduce_to(op, shape, mean, in, nullptr, out);
}

void VulkanBackend::dot(TensorView const& a, TensorView const& b, TensorView const& out) {
    reduce_to(detail::ReduceOp::sum, {1, a.numel, 1}, false, a, &b, out);
}

void VulkanBackend::reduce_to(detail::ReduceOp op, detail::ReduceShape shape, bool mean, TensorView const& in,
                              TensorView const* other, TensorView const& out) {
    bool const arg = detail::is_arg_reduction(op);
    if (in.dtype != DType::f32 || (other && other->dtype != DType::f32) || out.dtype != (arg ? DType::i64 : DType::f32))
        throw Unsupported("vulkan: reductions take f32 tensors and write f32 (i64 indices for argmax/argmin)");
    std::size_t const outputs = shape.outer * shape.inner;
    if (outputs == 0) return;
    std::size_t const numel = outputs * shape.extent;
    if (shape.extent == 0) {
        // Nothing to reduce: a sum is 0 (mean 0/0 is NaN, as on the CPU); max/min/arg are refused upstream.
        if (op != detail::ReduceOp::sum) throw ShapeError("vulkan: " + std::string(to_string(op)) + " of an empty extent");
        float const v = mean ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
        fill(out.buffer, out.offset, outputs * sizeof(float), &v, sizeof v);
        return;
    }

    std::lock_guard lock(mutex_);
    reclaim();
    std::uint32_t const wg = std::bit_floor(std::min<std::uint32_t>(workgroup_size_, 256));
    Shader const shader = subgroups() ? Shader::reduce_subgroup : Shader::reduce;

    // Chunks per output: enough parallel work for a GPU without more than max_partials partials.
    // A workgroup per output for long contiguous runs; short ones (and columns) an invocation each.
    bool const rows = shape.inner == 1 && shape.extent > 256;
    std::size_t chunks = 1;
    if (rows) {
        if (outputs < 1024) chunks = (shape.extent + elements_per_group - 1) / elements_per_group;
    } else {
        std::size_t const want = std::max<std::size_t>(1, 65536 / outputs);
        chunks = std::min((shape.extent + elements_per_thread - 1) / elements_per_thread, want);
    }
    chunks = std::clamp<std::size_t>(std::min({chunks, max_chunks, max_partials / outputs}), 1, max_chunks);
    std::size_t const chunk_len = (shape.extent + chunks - 1) / chunks;
    chunks = (shape.extent + chunk_len - 1) / chunk_len;  // no empty chunks

    Binding const x = bind(in, numel * sizeof(float), Access::read, "reduction input");
    Binding const y = other ? bind(*other, numel * sizeof(float), Access::read, "dot input") : Binding{x.buffer, x.base, x.size, 0, 0};
    Binding const result = bind(out, outputs * (arg ? 8 : 4), Access::write, "reduction output");
    ReducePush push;
    push.outputs = u32(outputs, "output count");
    push.extent = u32(shape.extent, "extent");
    push.inner = u32(shape.inner, "inner size");
    push.chunks = static_cast<std::uint32_t>(chunks);
    push.chunk_len = u32(chunk_len, "chunk");
    push.x_offset = x.element_offset(sizeof(float));
    push.y_offset = y.element_offset(sizeof(float));
    push.out_offset = result.element_offset(sizeof(std::uint32_t));
    push.mean = mean ? 1 : 0;

    std::uint32_t const code = static_cast<std::uint32_t>(op);
    std::uint32_t const product = other ? 1 : 0;
    std::size_t const work = outputs * chunks;
    std::uint32_t const first_groups = static_cast<std::uint32_t>(
        std::min<std::size_t>(rows ? work : (work + wg - 1) / wg, max_groups()));
    Mode const first_mode = rows ? rows_mode : columns_mode;
    if (chunks == 1) {
        Binding const unused{x.buffer, x.base, x.size, 0, 0};
        dispatch(shader, {code, wg, first_mode, product, 1}, {x, result, unused, y}, push, {first_groups});
    } else {
        ScratchBuffer partials = scratch(work * partial_bytes);
        Binding untouched = result;  // the first pass writes partials only
        untouched.bytes = 0;
        untouched.last_use = nullptr;
        dispatch(shader, {code, wg, first_mode, product, 0}, {x, untouched, partials.bind(Access::write), y}, push,
                 {first_groups});
        std::uint32_t const groups = static_cast<std::uint32_t>(std::min<std::size_t>(outputs, max_groups()));
        dispatch(shader, {code, wg, combine_mode, 0, 1}, {x, result, partials.bind(Access::read), y}, push, {groups});
    }
    stream_.submit_if_large();
}

}  // namespace rayo::vulkan
