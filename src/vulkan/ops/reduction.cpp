// The reduction family on Vulkan: sum, mean, max, min, argmax, argmin over [outer, extent, inner]
// and dot (shaders/reduce.comp or reduce_subgroup.comp). Long extents are split into chunks reduced
// by separate workgroups (or invocations) into a scratch buffer of partials, which a second
// dispatch combines in chunk order: deterministic, no atomics. f16 and bf16 inputs through the
// _element16 builds, reduced in f32 into f32 results.
#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"

namespace rayo::vulkan::ops {

namespace {

// Mirrors the push constants of shaders/reduce_body.glsl.
struct ReducePush {
    std::uint32_t outputs = 0, extent = 0, inner = 0, chunks = 1, chunk_len = 0;
    std::uint32_t x_offset = 0, y_offset = 0, out_offset = 0, mean = 0;
};

enum Mode : std::uint32_t { rows_mode = 0, columns_mode = 1, combine_mode = 2 };

constexpr std::size_t partial_bytes = 16;         // struct Partial in the shader
constexpr std::size_t elements_per_group = 4096;  // MODE 0: a chunk per workgroup of this many elements
constexpr std::size_t elements_per_thread = 64;   // MODE 1: a chunk per invocation
constexpr std::size_t max_partials = 65536;       // bounds the scratch buffer (1 MiB)
constexpr std::size_t max_chunks = 1024;          // the combine pass reads <= 4 partials per invocation

constexpr std::size_t u32_limit = 0xffffffffu;

Support reduce_supports(ShaderRunner const& r, Op op, op::ReduceShape shape, OpViews const& v) {
    Support const s = detail::reduction_floating("vulkan", op, v, is_arg_reduction(op) ? DType::i64 : DType::f32);
    if (!s.native) return s;
    if (shape.outer * shape.inner > u32_limit || shape.extent > u32_limit || shape.inner > u32_limit)
        return Support::no("vulkan reductions count outputs and extents in 32 bits");
    return element_type_supported(r, op, v.in[0].dtype);
}

// Reduces in (·other, for dot) into out: `op` sum, max, min, argmax or argmin, `mean` dividing sums.
void reduce_to(ShaderRunner& r, Op op, op::ReduceShape shape, bool mean, TensorView const& in, TensorView const* other,
               TensorView const& out) {
    bool const arg = is_arg_reduction(op);
    std::size_t const outputs = shape.outer * shape.inner;
    if (outputs == 0) return;
    std::size_t const numel = outputs * shape.extent;
    if (shape.extent == 0) {
        // Nothing to reduce: a sum is 0 (mean 0/0 is NaN, as on the CPU); max/min/arg are refused upstream.
        float const v = mean ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
        r.fill(r.bind(out, outputs * sizeof(float), Access::write, "reduction output"),
               std::bit_cast<std::uint32_t>(v));
        return;
    }

    std::uint32_t const wg = std::bit_floor(std::min<std::uint32_t>(r.workgroup_size(), 256));

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

    std::size_t const size = bytes_for(in.dtype, 1);
    Binding const x = r.bind(in, numel * size, Access::read, "reduction input");
    Binding const y = other ? r.bind(*other, numel * size, Access::read, "dot input") : x.untouched();
    Binding const result = r.bind(out, outputs * (arg ? 8 : 4), Access::write, "reduction output");
    ReducePush push;
    push.outputs = static_cast<std::uint32_t>(outputs);
    push.extent = static_cast<std::uint32_t>(shape.extent);
    push.inner = static_cast<std::uint32_t>(shape.inner);
    push.chunks = static_cast<std::uint32_t>(chunks);
    push.chunk_len = static_cast<std::uint32_t>(chunk_len);
    push.x_offset = x.element_offset(size);
    push.y_offset = y.element_offset(size);
    push.out_offset = result.element_offset(sizeof(std::uint32_t));
    push.mean = mean ? 1 : 0;

    auto const code = static_cast<std::uint32_t>(op);
    std::uint32_t const product = other ? 1 : 0;
    std::size_t const work = outputs * chunks;
    std::uint32_t const first_groups =
        static_cast<std::uint32_t>(std::min<std::size_t>(rows ? work : (work + wg - 1) / wg, r.max_groups()));
    Mode const first_mode = rows ? rows_mode : columns_mode;
    // The build for the input's element type, with `mode`, `product` and `final` set.
    auto build = [&](Mode mode, std::uint32_t with_product, std::uint32_t final_pass, SpecConstants& constants) {
        constants = {code, wg, mode, with_product, final_pass};
        return r.subgroups()
                   ? element_build(Shader::reduce_subgroup, Shader::reduce_subgroup_element16, in.dtype, constants)
                   : element_build(Shader::reduce, Shader::reduce_element16, in.dtype, constants);
    };
    SpecConstants constants{};
    if (chunks == 1) {
        Shader const shader = build(first_mode, product, 1, constants);
        r.dispatch(shader, constants, {x, result, x.untouched(), y}, push, {first_groups});
        return;
    }
    ScratchBuffer partials = r.scratch(work * partial_bytes);
    Shader const first = build(first_mode, product, 0, constants);
    r.dispatch(first, constants, {x, result.untouched(), partials.bind(Access::write), y}, push, {first_groups});
    std::uint32_t const groups = static_cast<std::uint32_t>(std::min<std::size_t>(outputs, r.max_groups()));
    Shader const combine = build(combine_mode, 0, 1, constants);
    r.dispatch(combine, constants, {x, result, partials.bind(Access::read), y}, push, {groups});
}

}  // namespace

Support supports(ShaderRunner const& r, op::Reduce const& d, OpViews const& v) {
    return reduce_supports(r, d.op, d.shape, v);
}

void run(ShaderRunner& r, op::Reduce const& d, OpViews const& v) {
    reduce_to(r, d.op == Op::mean ? Op::sum : d.op, d.shape, d.op == Op::mean, v.in[0], nullptr, v.out[0]);
}

Support supports(ShaderRunner const& r, op::Dot const& d, OpViews const& v) {
    return reduce_supports(r, d.op, {1, v.in[0].numel(), 1}, v);
}

void run(ShaderRunner& r, op::Dot const&, OpViews const& v) {
    reduce_to(r, Op::sum, {1, v.in[0].numel(), 1}, false, v.in[0], &v.in[1], v.out[0]);
}

}  // namespace rayo::vulkan::ops
