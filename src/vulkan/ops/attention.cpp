// Attention on Vulkan: shaders/attention.comp, flash style (a team of invocations per query row,
// the keys in blocks through an online softmax, the score matrix never in device memory), the
// head dim a specialization constant (any up to 256). When the query rows alone give too few
// workgroups to fill the device (decode: one row over a long KV cache) the keys are split across
// workgroups, whose partial (maximum, sum, output) rows attention_combine.comp then reduces.
// f16 and bf16 through the _element16 builds, computed in f32.
#include <algorithm>
#include <cstdint>
#include <string>

#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"
#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

namespace {

// Mirrors the push constants of shaders/attention.comp.
struct AttentionPush {
    std::uint32_t q_offset = 0, k_offset = 0, v_offset = 0, mask_offset = 0, o_offset = 0;
    std::uint32_t q_len = 0, kv_len = 0, heads = 0, kv_heads = 0;
    float scale = 1.0f;
    std::int32_t query_offset = 0;
    std::uint32_t mask_batch = 0, mask_head = 0, mask_row = 0;
    std::uint32_t splits = 1, keys_per_split = 0;
};

// Mirrors the push constants of shaders/attention_combine.comp.
struct CombinePush {
    std::uint32_t rows = 0, splits = 0, o_offset = 0;
};

// The shader's TEAM, BK, MAX_PER and MAX_ROWS.
constexpr std::size_t team = 16, key_block = 32, max_head_dim = 16 * team;
// Workgroups the query rows should give before the keys are not split; a split takes at least
// min_split_keys keys, and there are at most max_splits.
constexpr std::size_t busy_groups = 256, min_split_keys = 256, max_splits = 64;

struct Plan {
    std::uint32_t rows = 4;  // query rows a workgroup
    std::size_t row_groups = 0, splits = 1, keys_per_split = 0;
};

// Loop iterations of one invocation per block of keys (attention.comp's loops over the block: the
// dot products, the team's sums, the maximum, the weights; the loops over columns are unrolled),
// and besides the blocks.
constexpr std::uint64_t block_iterations = 4 * key_block + key_block / team + 1, other_iterations = 64;

Plan plan(op::Attention const& a, std::uint64_t loop_limit) {
    Plan p;
    p.rows = a.q_len < 4 ? 1 : 4;
    p.row_groups = (a.q_len + p.rows - 1) / p.rows;
    std::size_t const groups = p.row_groups * a.batch * a.heads;
    if (groups < busy_groups) {
        std::size_t const wanted = std::min((busy_groups + groups - 1) / groups, max_splits);
        p.splits = std::clamp<std::size_t>(a.kv_len / min_split_keys, 1, wanted);
    }
    // A driver that cuts long loops short (lavapipe) gets as many splits as keep each within it.
    if (loop_limit > other_iterations + block_iterations) {
        std::uint64_t const blocks = (loop_limit - other_iterations) / block_iterations;
        std::size_t const most_keys = static_cast<std::size_t>(std::min<std::uint64_t>(blocks, a.kv_len) * key_block);
        p.splits = std::max(p.splits, (a.kv_len + most_keys - 1) / most_keys);
    }
    std::size_t const per = (a.kv_len + p.splits - 1) / p.splits;
    p.keys_per_split = std::max<std::size_t>(key_block, (per + key_block - 1) / key_block * key_block);
    p.splits = std::max<std::size_t>(1, (a.kv_len + p.keys_per_split - 1) / p.keys_per_split);
    return p;
}

}  // namespace

Support supports(ShaderRunner const& r, op::Attention const& a, OpViews const& v) {
    DType const type = v.in[0].dtype;
    if (!detail::is_floating(type) || v.in[1].dtype != type || v.in[2].dtype != type || v.out[0].dtype != type)
        return detail::floating_types_only("vulkan", a.op);
    if (a.has_mask && v.in[3].dtype != DType::f32) return Support::no("vulkan: attention takes an f32 mask");
    if (a.head_dim > max_head_dim)
        return Support::no("vulkan: attention's shader takes head_dim up to " + std::to_string(max_head_dim) + ", not " +
                           std::to_string(a.head_dim));
    for (TensorView const* t : {&v.in[0], &v.in[1], &v.out[0]})
        if (t->numel() > 0xffffffffu) return Support::no("vulkan: attention over tensors of 2^32 elements or more");
    if (a.has_mask && v.in[3].numel() > 0xffffffffu) return Support::no("vulkan: attention with a mask of 2^32 elements or more");
    Plan const p = plan(a, r.physical().loop_iteration_limit);
    if (p.row_groups > r.max_groups() || a.batch * a.heads > r.max_groups() || p.splits > r.max_groups())
        return Support::no("vulkan: attention with more query blocks or batch·heads than one dispatch's groups");
    if (p.splits > 1 && a.batch * a.q_len * a.heads * p.splits * (a.head_dim + 2) > 0xffffffffu)
        return Support::no("vulkan: attention whose split partial rows pass 2^32 values");
    if (a.query_offset > INT32_MAX || a.query_offset < -INT32_MAX)
        return Support::no("vulkan: attention with a query_offset past 32 bits");
    return element_type_supported(r, a.op, type);
}

void run(ShaderRunner& r, op::Attention const& a, OpViews const& v) {
    TensorView const &qv = v.in[0], &kv = v.in[1], &vv = v.in[2], &out = v.out[0];
    std::size_t const size = bytes_for(qv.dtype, 1);
    Binding const q = r.bind(qv, qv.bytes(), Access::read, "attention q");
    Binding const k = r.bind(kv, kv.bytes(), Access::read, "attention k");
    Binding const val = r.bind(vv, vv.bytes(), Access::read, "attention v");
    Binding const o = r.bind(out, out.bytes(), Access::write, "attention output");
    Binding const mask = a.has_mask ? r.bind(v.in[3], v.in[3].bytes(), Access::read, "attention mask") : q.untouched();
    Plan const p = plan(a, r.physical().loop_iteration_limit);
    AttentionPush push;
    push.q_offset = q.element_offset(size);
    push.k_offset = k.element_offset(size);
    push.v_offset = val.element_offset(size);
    push.mask_offset = a.has_mask ? mask.element_offset(4) : 0;
    push.o_offset = o.element_offset(size);
    push.q_len = static_cast<std::uint32_t>(a.q_len);
    push.kv_len = static_cast<std::uint32_t>(a.kv_len);
    push.heads = static_cast<std::uint32_t>(a.heads);
    push.kv_heads = static_cast<std::uint32_t>(a.kv_heads);
    push.scale = a.scale;
    push.query_offset = static_cast<std::int32_t>(a.query_offset);
    push.mask_batch = static_cast<std::uint32_t>(a.mask_batch);
    push.mask_head = static_cast<std::uint32_t>(a.mask_head);
    push.mask_row = static_cast<std::uint32_t>(a.mask_row);
    push.splits = static_cast<std::uint32_t>(p.splits);
    push.keys_per_split = static_cast<std::uint32_t>(p.keys_per_split);
    r.check_loop_budget(p.keys_per_split / key_block * block_iterations + other_iterations,
                        "attention over " + std::to_string(p.keys_per_split) + " keys a workgroup");
    bool const split = p.splits > 1;
    std::size_t const rows = a.batch * a.q_len * a.heads;
    std::uint32_t const workgroup = r.workgroup_size();
    auto const combine_groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((rows * a.head_dim + workgroup - 1) / workgroup, r.max_groups()));
    if (split) {
        std::size_t const threads = std::size_t{combine_groups} * workgroup;
        r.check_loop_budget((rows * a.head_dim + threads - 1) / threads * 2 * p.splits,
                            "attention's combination of " + std::to_string(p.splits) + " splits");
    }
    SpecConstants constants{0u, p.rows * static_cast<std::uint32_t>(team), static_cast<std::uint32_t>(a.head_dim), p.rows,
                            a.has_mask ? 1u : 0u, a.causal ? 1u : 0u, split ? 1u : 0u};
    Shader const shader = element_build(Shader::attention, Shader::attention_element16, qv.dtype, constants);
    Groups const groups{static_cast<std::uint32_t>(p.row_groups), static_cast<std::uint32_t>(a.batch * a.heads),
                        static_cast<std::uint32_t>(p.splits)};
    if (!split) {
        r.dispatch(shader, constants, {q, k, val, mask, o, q.untouched()}, push, groups);
        return;
    }
    ScratchBuffer const partials = r.scratch(rows * p.splits * (a.head_dim + 2) * sizeof(float));
    r.dispatch(shader, constants, {q, k, val, mask, o.untouched(), partials.bind(Access::write)}, push, groups);
    CombinePush combine{static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(p.splits), push.o_offset};
    SpecConstants combine_constants{0u, workgroup, static_cast<std::uint32_t>(a.head_dim)};
    Shader const combine_shader =
        element_build(Shader::attention_combine, Shader::attention_combine_element16, qv.dtype, combine_constants);
    r.dispatch(combine_shader, combine_constants, {partials.bind(Access::read), o}, combine, {combine_groups});
}

}  // namespace rayo::vulkan::ops
