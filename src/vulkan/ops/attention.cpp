// Attention on Vulkan, five shaders:
// * f16 prefill on devices with cooperative matrices (tensor cores): attention_coopmat_d<D>.comp,
//   flash attention with q·kᵀ and P·v on 16x16 by 16x8 fragments, 64 query rows a workgroup, for
//   head_dim 64, 80, 96, 128 and 256 (a build each, so its loops unroll);
// * one query row a head without a mask (a decode step), with subgroups and key and value views on
//   16-byte chunks: attention_decode_subgroup.comp, a workgroup a split of 32 to 128 keys of a
//   key/value head for all the query heads of its group, a team of up to 8 lanes reading a key row
//   in 16-byte chunks and summing its dot products by shuffles, an invocation a chunk of the value
//   rows for a subset of the keys;
// * other decode steps (no subgroups, unaligned views, head_dim not of whole chunks):
//   attention_decode.comp, a workgroup a split of 32 keys, an invocation a (head, key) pair;
// * everything else (f32, bf16, unaligned views, other head dims, devices without those features):
//   attention.comp, a team of invocations per query row, the keys in blocks through an online softmax,
//   the head dim a specialization constant (any up to 256), split across workgroups with the same
//   combining pass where the query rows alone give too few workgroups.
// All compute in f32; the score matrix never reaches device memory.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
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
    std::uint32_t position_offset = 0;  // of the stored position (STORED_POSITION), in i32 elements
};

// Mirrors the push constants of shaders/attention_decode.comp and attention_decode_subgroup.comp.
struct DecodePush {
    std::uint32_t q_offset = 0, k_offset = 0, v_offset = 0;
    std::uint32_t kv_len = 0, heads = 0, kv_heads = 0, seen = 0;
    float scale = 1.0f;
    std::uint32_t splits = 1;
    std::uint32_t position_offset = 0;
};

// The decode shaders' MAX_GROUP and MAX_D, and attention_decode.comp's keys a split: 32, so that a
// decode step's short cache still gives many workgroups (docs/backends/vulkan.md has the figure).
constexpr std::size_t decode_max_group = 8, decode_max_head_dim = 256, decode_split_keys = 32;

// One query row a head, no mask, a group the shader holds.
bool takes_decode(op::Attention const& a) {
    return a.q_len == 1 && !a.has_mask && a.kv_heads > 0 && a.heads / a.kv_heads <= decode_max_group &&
           a.head_dim <= decode_max_head_dim;
}

// The keys the decode row sees: under causal, those up to its query offset (all of them as far as
// the host knows when the shader reads the position).
std::size_t decode_seen(op::Attention const& a) {
    if (!a.causal || a.stored_position) return a.kv_len;
    return static_cast<std::size_t>(
        std::clamp<std::int64_t>(a.query_offset + 1, 0, static_cast<std::int64_t>(a.kv_len)));
}

// The keys a split: decode_split_keys, halved while a workgroup of keys · group invocations would
// pass the device's limits.
std::size_t decode_keys(ShaderRunner const& r, op::Attention const& a) {
    auto const& limits = r.limits();
    std::size_t const most = std::min(limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]);
    std::size_t const group = a.heads / a.kv_heads;
    std::size_t keys = decode_split_keys;
    while (keys > 1 && keys * group > most) keys /= 2;
    return keys;
}

std::size_t decode_splits(ShaderRunner const& r, op::Attention const& a) {
    std::size_t const keys = decode_keys(r, a);
    return std::max<std::size_t>(1, (decode_seen(a) + keys - 1) / keys);
}

// attention_decode_subgroup.comp: its workgroup size, its keys a split (most_keys, halved down to
// least_keys while the splits give fewer than busy workgroups, so that a short cache still fills
// the GPU; 512 ran the H200's 8192-key step faster than 256 or 1024, the combining pass growing
// with the splits) and the most lanes a team (the least subgroup size of a compute shader on
// devices that vary it).
constexpr std::size_t subgroup_decode_workgroup = 128, subgroup_decode_most_keys = 128, subgroup_decode_least_keys = 32,
                      subgroup_decode_busy = 512, subgroup_decode_max_team = 8;

struct SubgroupDecode {
    std::size_t keys = 0, splits = 0, team = 0;
};

// The subgroup decode shader's plan where it runs: subgroups on, a head_dim of whole 16-byte chunks,
// key and value views that start on one, full subgroups, a team the subgroup holds and shared
// memory the device has.
std::optional<SubgroupDecode> subgroup_decode(ShaderRunner const& r, op::Attention const& a, DType type,
                                              std::uint32_t k_offset, std::uint32_t v_offset) {
    std::size_t const chunk = 16 / bytes_for(type, 1), chunks = a.head_dim / chunk, group = a.heads / a.kv_heads;
    std::size_t const subgroup = r.physical().subgroup_size;
    if (!r.subgroups() || a.head_dim == 0 || a.head_dim % chunk != 0 || k_offset % chunk != 0 ||
        v_offset % chunk != 0 || subgroup_decode_workgroup % subgroup != 0 || chunks > subgroup_decode_workgroup)
        return std::nullopt;
    SubgroupDecode d;
    // A team of the least power of two lanes that leaves each at most two chunks of a key row.
    d.team = 1;
    while (d.team * 2 < chunks && d.team < std::min(subgroup, subgroup_decode_max_team)) d.team *= 2;
    if (chunks > 8 * d.team) return std::nullopt;  // at most 8 chunks a lane in registers (the shader's PER)
    std::size_t const seen = decode_seen(a), kv_groups = a.batch * a.kv_heads;
    d.keys = subgroup_decode_most_keys;
    while (d.keys > subgroup_decode_least_keys && (seen + d.keys - 1) / d.keys * kv_groups < subgroup_decode_busy)
        d.keys /= 2;
    d.splits = std::max<std::size_t>(1, (seen + d.keys - 1) / d.keys);
    std::size_t const subsets = subgroup_decode_workgroup / chunks;
    // q, the halving tree's slots (attention_decode_subgroup.comp's SLOTS) and the scores, in floats.
    std::size_t const slots = std::max<std::size_t>(1, subsets / 2);
    std::size_t const shared = (group * a.head_dim * (1 + slots) + group * d.keys) * sizeof(float);
    if (shared > r.limits().maxComputeSharedMemorySize) return std::nullopt;
    return d;
}

// Mirrors the push constants of shaders/attention_combine.comp.
struct CombinePush {
    std::uint32_t rows = 0, splits = 0, o_offset = 0;
};

// attention.comp's TEAM, BK, MAX_PER and MAX_ROWS.
constexpr std::size_t team = 16, key_block = 32, max_head_dim = 16 * team;
// Workgroups the query rows should give before the keys are not split (a workgroup of one query
// row is only TEAM invocations, so a decode step wants many); a split takes at least one block of
// keys, and there are at most max_splits.
constexpr std::size_t busy_groups = 1024, min_split_keys = key_block, max_splits = 64;

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

// ---- attention_coopmat_d<D>.comp: its query rows a workgroup, key block and shared memory.
constexpr std::size_t coop_rows = 64, coop_keys = 32, coop_subgroups = 4;

std::optional<Shader> coopmat_shader(std::size_t head_dim) {
    switch (head_dim) {
        case 64: return Shader::attention_coopmat_d64;
        case 80: return Shader::attention_coopmat_d80;
        case 96: return Shader::attention_coopmat_d96;
        case 128: return Shader::attention_coopmat_d128;
        case 256: return Shader::attention_coopmat_d256;
        default: return std::nullopt;
    }
}

std::size_t coopmat_shared_bytes(std::size_t d) {
    std::size_t const p_stride = d < 256 ? 40 : 32;
    return 2 * coop_keys * (d + 8) * 2 + coop_subgroups * 16 * ((coop_keys + 4) * 4 + p_stride * 2 + 8 * 4);
}

// The element offset of each operand a multiple of 8 (16-byte runs).
bool runs_aligned(std::initializer_list<std::uint32_t> offsets) {
    return std::all_of(offsets.begin(), offsets.end(), [](std::uint32_t o) { return o % 8 == 0; });
}

enum class Path { portable, coopmat };

struct Choice {
    Path path = Path::portable;
    Plan plan;  // rows, groups, splits
};

// Alignment is known only from the bindings, so run() decides; supports() needs no path.
Choice choose(ShaderRunner const& r, op::Attention const& a, DType type, std::uint32_t q_off, std::uint32_t k_off,
              std::uint32_t v_off, std::uint32_t o_off) {
    Choice c;
    std::uint32_t const shared = r.limits().maxComputeSharedMemorySize;
    PhysicalDevice const& dev = r.physical();
    // Fewer query rows than a subgroup's 16 (decode) fill the GPU better through the portable
    // shader's key split.
    if (a.q_len >= 16 && type == DType::f16 && coopmat_shader(a.head_dim) &&
        dev.cooperative_matrix != PhysicalDevice::CooperativeMatrix::none && r.switches().cooperative_matrix &&
        r.subgroups() && dev.subgroup_size == 32 && coopmat_shared_bytes(a.head_dim) <= shared &&
        runs_aligned({q_off, k_off, v_off, o_off})) {
        c.path = Path::coopmat;
        c.plan.rows = coop_rows;
        c.plan.row_groups = (a.q_len + coop_rows - 1) / coop_rows;
        c.plan.keys_per_split = a.kv_len;
        return c;
    }
    c.plan = plan(a, r.physical().loop_iteration_limit);
    return c;
}

}  // namespace

Support supports(ShaderRunner const& r, op::Attention const& a, OpViews const& v) {
    DType const type = v.in[0].dtype;
    if (!detail::is_floating(type) || v.in[1].dtype != type || v.in[2].dtype != type || v.out[0].dtype != type)
        return detail::floating_types_only("vulkan", a.op);
    if (a.has_mask && v.in[3].dtype != DType::f32) return Support::no("vulkan: attention takes an f32 mask");
    if (a.head_dim > max_head_dim)
        return Support::no("vulkan: attention's shader takes head_dim up to " + std::to_string(max_head_dim) +
                           ", not " + std::to_string(a.head_dim));
    for (TensorView const* t : {&v.in[0], &v.in[1], &v.out[0]})
        if (t->numel() > 0xffffffffu) return Support::no("vulkan: attention over tensors of 2^32 elements or more");
    if (a.has_mask && v.in[3].numel() > 0xffffffffu)
        return Support::no("vulkan: attention with a mask of 2^32 elements or more");
    if (takes_decode(a)) {
        if (decode_splits(r, a) > r.max_groups() || a.batch * a.kv_heads > r.max_groups())
            return Support::no("vulkan: attention with more key splits or batch·heads than one dispatch's groups");
        if (a.batch * a.heads * decode_splits(r, a) * (a.head_dim + 2) > 0xffffffffu)
            return Support::no("vulkan: attention whose split partial rows pass 2^32 values");
        return element_type_supported(r, a.op, type);
    }
    Plan const p = plan(a, r.physical().loop_iteration_limit);
    if (p.row_groups > r.max_groups() || a.batch * a.heads > r.max_groups() || p.splits > r.max_groups())
        return Support::no("vulkan: attention with more query blocks or batch·heads than one dispatch's groups");
    if (p.splits > 1 && a.batch * a.q_len * a.heads * p.splits * (a.head_dim + 2) > 0xffffffffu)
        return Support::no("vulkan: attention whose split partial rows pass 2^32 values");
    if (a.query_offset > INT32_MAX || a.query_offset < -INT32_MAX)
        return Support::no("vulkan: attention with a query_offset past 32 bits");
    return element_type_supported(r, a.op, type);
}

namespace {

// The split rows (maximum, sum, unnormalised output) in `partials` reduced into the output.
void combine_splits(ShaderRunner& r, op::Attention const& a, DType type, ScratchBuffer const& partials,
                    Binding const& o, std::size_t splits, std::uint32_t o_offset) {
    std::size_t const rows = a.batch * a.q_len * a.heads;
    std::uint32_t const workgroup = r.workgroup_size();
    auto const groups = static_cast<std::uint32_t>(
        std::min<std::size_t>((rows * a.head_dim + workgroup - 1) / workgroup, r.max_groups()));
    CombinePush combine{static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(splits), o_offset};
    SpecConstants constants{0u, workgroup, static_cast<std::uint32_t>(a.head_dim)};
    Shader const shader =
        element_build(Shader::attention_combine, Shader::attention_combine_element16, type, constants);
    r.dispatch(shader, constants, {partials.bind(Access::read), o}, combine, {groups});
}

void check_combine_budget(ShaderRunner const& r, op::Attention const& a, std::size_t splits) {
    std::size_t const threads = std::size_t{r.max_groups()} * r.workgroup_size();
    std::size_t const elements = a.batch * a.q_len * a.heads * a.head_dim;
    r.check_loop_budget((elements + threads - 1) / threads * 2 * splits,
                        "attention's combination of " + std::to_string(splits) + " splits");
}

// A decode step on attention_decode_subgroup.comp where it runs, else attention_decode.comp; the
// splits merged by attention_combine.comp.
void run_decode(ShaderRunner& r, op::Attention const& a, Binding const& q, Binding const& k, Binding const& val,
                Binding const& position, Binding const& o, DType type) {
    std::size_t const size = bytes_for(type, 1), group = a.heads / a.kv_heads;
    DecodePush push;
    push.q_offset = q.element_offset(size);
    push.k_offset = k.element_offset(size);
    push.v_offset = val.element_offset(size);
    push.kv_len = static_cast<std::uint32_t>(a.kv_len);
    push.heads = static_cast<std::uint32_t>(a.heads);
    push.kv_heads = static_cast<std::uint32_t>(a.kv_heads);
    push.seen = static_cast<std::uint32_t>(decode_seen(a));
    push.scale = a.scale;
    push.position_offset = position.element_offset(4);
    std::uint32_t const stored = a.stored_position ? 1u : 0u;
    std::optional<SubgroupDecode> const fast = subgroup_decode(r, a, type, push.k_offset, push.v_offset);
    std::size_t const keys = fast ? fast->keys : decode_keys(r, a), splits = fast ? fast->splits : decode_splits(r, a);
    push.splits = static_cast<std::uint32_t>(splits);
    check_combine_budget(r, a, splits);
    ScratchBuffer const partials = r.scratch(a.batch * a.heads * splits * (a.head_dim + 2) * sizeof(float));
    Groups const groups{static_cast<std::uint32_t>(splits), static_cast<std::uint32_t>(a.batch * a.kv_heads)};
    if (fast) {
        SpecConstants constants{0u,
                                static_cast<std::uint32_t>(subgroup_decode_workgroup),
                                static_cast<std::uint32_t>(a.head_dim),
                                static_cast<std::uint32_t>(group),
                                static_cast<std::uint32_t>(keys),
                                static_cast<std::uint32_t>(fast->team),
                                stored};
        Shader const shader = element_build(Shader::attention_decode_subgroup,
                                            Shader::attention_decode_subgroup_element16, type, constants);
        r.dispatch(shader, constants, {q, k, val, partials.bind(Access::write), position}, push, groups);
    } else {
        SpecConstants constants{0u,
                                static_cast<std::uint32_t>(keys * group),
                                static_cast<std::uint32_t>(a.head_dim),
                                static_cast<std::uint32_t>(group),
                                static_cast<std::uint32_t>(keys),
                                stored};
        Shader const shader =
            element_build(Shader::attention_decode, Shader::attention_decode_element16, type, constants);
        r.dispatch(shader, constants, {q, k, val, partials.bind(Access::write), position}, push, groups);
    }
    combine_splits(r, a, type, partials, o, splits, o.element_offset(size));
}

}  // namespace

void run(ShaderRunner& r, op::Attention const& a, OpViews const& v) {
    TensorView const &qv = v.in[0], &kv = v.in[1], &vv = v.in[2], &out = v.out[0];
    std::size_t const size = bytes_for(qv.dtype, 1);
    Binding const q = r.bind(qv, qv.bytes(), Access::read, "attention q");
    Binding const k = r.bind(kv, kv.bytes(), Access::read, "attention k");
    Binding const val = r.bind(vv, vv.bytes(), Access::read, "attention v");
    Binding const o = r.bind(out, out.bytes(), Access::write, "attention output");
    Binding const position =
        a.stored_position ? r.bind(v.in[4], v.in[4].bytes(), Access::read, "attention query_position") : q.untouched();
    if (takes_decode(a)) return run_decode(r, a, q, k, val, position, o, qv.dtype);
    Binding const mask = a.has_mask ? r.bind(v.in[3], v.in[3].bytes(), Access::read, "attention mask") : q.untouched();
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
    Choice const c = choose(r, a, qv.dtype, push.q_offset, push.k_offset, push.v_offset, push.o_offset);
    Plan const& p = c.plan;
    push.position_offset = position.element_offset(4);
    push.splits = static_cast<std::uint32_t>(p.splits);
    push.keys_per_split = static_cast<std::uint32_t>(p.keys_per_split);
    auto const flag = [](bool b) { return b ? 1u : 0u; };
    auto const d = static_cast<std::uint32_t>(a.head_dim);

    if (c.path == Path::coopmat) {
        SpecConstants constants{0u, 128u, d, 0u, flag(a.has_mask), flag(a.causal), flag(a.stored_position)};
        r.dispatch(*coopmat_shader(a.head_dim), constants, {q, k, val, mask, o, position}, push,
                   {static_cast<std::uint32_t>(p.row_groups), static_cast<std::uint32_t>(a.batch * a.heads)});
        return;
    }
    bool const split = p.splits > 1;
    std::size_t const rows = a.batch * a.q_len * a.heads;
    if (split) check_combine_budget(r, a, p.splits);
    std::optional<ScratchBuffer> partials;
    if (split) partials.emplace(r.scratch(rows * p.splits * (a.head_dim + 2) * sizeof(float)));
    Binding const partial_binding = split ? partials->bind(Access::write) : q.untouched();
    Binding const direct_out = split ? o.untouched() : o;
    r.check_loop_budget(p.keys_per_split / key_block * block_iterations + other_iterations,
                        "attention over " + std::to_string(p.keys_per_split) + " keys a workgroup");
    SpecConstants constants{0u,
                            p.rows * static_cast<std::uint32_t>(team),
                            d,
                            p.rows,
                            flag(a.has_mask),
                            flag(a.causal),
                            flag(split),
                            0u /* the element type */,
                            flag(a.stored_position)};
    Shader const shader = element_build(Shader::attention, Shader::attention_element16, qv.dtype, constants);
    r.dispatch(shader, constants, {q, k, val, mask, direct_out, partial_binding, position}, push,
               {static_cast<std::uint32_t>(p.row_groups), static_cast<std::uint32_t>(a.batch * a.heads),
                static_cast<std::uint32_t>(p.splits)});
    if (split) combine_splits(r, a, qv.dtype, *partials, o, p.splits, push.o_offset);
}

}  // namespace rayo::vulkan::ops
