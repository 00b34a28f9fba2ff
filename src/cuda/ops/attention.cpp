// The attention family on CUDA (rayo/ptx/kernels/attention.hpp): f16 and bf16 prefill on the
// tensor cores (flash attention, 64 query rows a block) for head_dim 64, 80, 96, 128 and 256 and
// 16-byte aligned operands, on Hopper's warpgroup MMAs fed by TMA (128 rows a block) for head_dim
// 64 and 128 without a mask; f32, other head_dims up to 256, unaligned views, and a few query rows a
// key/value head (decode against a KV cache) on the decode kernel (a block a split of 128 keys) or,
// masked or outside its shapes, the SIMT kernel, whose warps split the keys when the rows alone
// would leave multiprocessors idle; split partial states are merged by attention_combine.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "cuda/ops/ops.hpp"
#include "rayo/ptx/kernels/attention.hpp"

namespace rayo::cuda::ops {

namespace {

namespace kernels = ptx::kernels;

constexpr std::array<std::size_t, 5> tensor_core_head_dims{64, 80, 96, 128, 256};
constexpr std::size_t max_head_dim = 256;
// A tensor-core block: 4 warps of two m16 row tiles (128 query rows) up to head_dim 128, whose
// O, S and row state fit the registers; one tile a warp (64 rows) for head_dim 256.
constexpr unsigned tc_warps = 4;
unsigned tc_warp_tiles(std::size_t head_dim) { return head_dim <= 128 ? 2 : 1; }
constexpr unsigned split_tile = 32;  // keys a SIMT tile
// A split of the keys spans at least this many keys (4 tiles), so its fixed costs stay small.
constexpr std::size_t min_split_keys = 128;
constexpr std::size_t decode_rows = 16;     // query rows a decode block (one m16 tile)
constexpr std::int64_t decode_split = 128;  // keys a decode block (4 warps of 32)

// q, k, v and out start on 16-byte boundaries and their rows are multiples of 16 bytes.
bool aligned(op::Attention const& a, OpViews const& v) {
    if (a.head_dim * size_of(v.in[0].dtype) % 16 != 0) return false;
    return std::ranges::all_of(std::array{&v.in[0], &v.in[1], &v.in[2], &v.out[0]},
                               [](TensorView const* view) { return view->offset % 16 == 0; });
}

bool takes_tensor_cores(op::Attention const& a, OpViews const& v, int multiprocessors) {
    if (v.in[0].dtype == DType::f32 || !aligned(a, v) ||
        std::ranges::find(tensor_core_head_dims, a.head_dim) == tensor_core_head_dims.end())
        return false;
    std::size_t const group = a.heads / a.kv_heads;
    std::size_t const rows = tc_warps * 16 * tc_warp_tiles(a.head_dim);
    std::size_t const row_blocks = (a.q_len + rows - 1) / rows;
    if (row_blocks > 65535) return false;  // the grid's y
    std::size_t const blocks = a.batch * a.heads * row_blocks;
    // A few rows a key/value head (decode) read the keys once on the SIMT kernel instead.
    return a.q_len > 4 && !(a.q_len * group <= 64 && blocks < static_cast<std::size_t>(multiprocessors));
}

// The parameters both kernels start with.
struct FrameArguments {
    std::uint64_t q, k, v, out, mask;
    std::uint32_t q_len, kv_len, heads, kv_heads;
    std::int32_t query_offset;
    std::uint64_t query_position;  // the stored position's address, or 0
    std::uint32_t causal;
    float scale_log2;
    std::uint64_t mask_batch, mask_head, mask_row;
};

FrameArguments frame_arguments(KernelRunner& runner, op::Attention const& a, OpViews const& v) {
    auto const offset = std::clamp<std::int64_t>(a.query_offset, -static_cast<std::int64_t>(a.q_len),
                                                 static_cast<std::int64_t>(a.kv_len));
    bool const mask = a.has_mask && v.in.size() > 3 && v.in[3].present;
    return {.q = runner.address(v.in[0]),
            .k = runner.address(v.in[1]),
            .v = runner.address(v.in[2]),
            .out = runner.address(v.out[0]),
            .mask = mask ? runner.address(v.in[3]) : 0,
            .q_len = static_cast<std::uint32_t>(a.q_len),
            .kv_len = static_cast<std::uint32_t>(a.kv_len),
            .heads = static_cast<std::uint32_t>(a.heads),
            .kv_heads = static_cast<std::uint32_t>(a.kv_heads),
            .query_offset = static_cast<std::int32_t>(offset),
            .query_position = a.stored_position ? runner.address(v.in[4]) : 0,
            .causal = a.causal ? 1u : 0u,
            .scale_log2 = static_cast<float>(a.scale * 1.4426950408889634),
            .mask_batch = a.mask_batch,
            .mask_head = a.mask_head,
            .mask_row = a.mask_row};
}

// Hopper: the warp-specialised wgmma kernel where it takes the shape (head_dim 64 or 128, no mask)
// and the tensor-core kernel would run.
constexpr unsigned wgmma_rows = 128;
constexpr std::uint64_t wgmma_l2_working_set = std::uint64_t{16} << 20;
bool takes_wgmma(KernelRunner const& runner, op::Attention const& a, FrameArguments const& f) {
    return f.mask == 0 && (a.head_dim == 64 || a.head_dim == 128) &&
           (a.q_len + wgmma_rows - 1) / wgmma_rows * a.heads <= std::numeric_limits<std::int32_t>::max() &&
           warpgroup_mma_enabled(runner);
}

void run_wgmma(KernelRunner& runner, op::Attention const& a, OpViews const& v, FrameArguments const& f) {
    kernels::AttentionConfig const config{.algorithm = kernels::AttentionAlgorithm::wgmma,
                                          .element = v.in[0].dtype,
                                          .head_dim = static_cast<unsigned>(a.head_dim),
                                          .warps = 12};
    auto const specs = kernels::attention_tensor_maps(config, {.q = f.q,
                                                               .k = f.k,
                                                               .v = f.v,
                                                               .batch = a.batch,
                                                               .q_len = a.q_len,
                                                               .kv_len = a.kv_len,
                                                               .heads = a.heads,
                                                               .kv_heads = a.kv_heads});
    ptx::TensorMap const q_map = runner.encode_tensor_map(specs[0]), k_map = runner.encode_tensor_map(specs[1]),
                         v_map = runner.encode_tensor_map(specs[2]);
    LaunchDims const dims{.grid = {static_cast<unsigned>((a.q_len + wgmma_rows - 1) / wgmma_rows * a.heads),
                                   static_cast<unsigned>(a.batch), 1},
                          .block = {config.warps * 32, 1, 1},
                          .shared_bytes = kernels::attention_shared_bytes(config)};
    KernelKey key;
    key << "attention/" << kernels::attention_name(config) << "/" << ptx::to_string(runner.target());
    // The blocks take every head's longest causal blocks first while all heads' k and v fit well in
    // L2; past that, groups of 4 heads at a time keep what the resident blocks read there (with 32
    // heads × 4096 keys at once, 64 MiB, a third of the reads missed L2: 565 against 528 µs, H200).
    std::uint64_t const kv_bytes = 4 * a.kv_len * a.kv_heads * a.head_dim;
    auto const group_heads =
        static_cast<std::uint32_t>(kv_bytes <= wgmma_l2_working_set ? a.heads : std::min<std::size_t>(a.heads, 4));
    runner.run(
        key.view(), [config] { return kernels::attention(config); }, dims, q_map, k_map, v_map, f.out, f.q_len,
        f.kv_len, f.heads, f.kv_heads, f.query_offset, f.query_position, f.causal, f.scale_log2, group_heads);
}

void run_tensor_cores(KernelRunner& runner, op::Attention const& a, OpViews const& v, FrameArguments const& f) {
    kernels::AttentionConfig const config{.algorithm = kernels::AttentionAlgorithm::tensor_core,
                                          .element = v.in[0].dtype,
                                          .head_dim = static_cast<unsigned>(a.head_dim),
                                          .mask = f.mask != 0,
                                          .warps = tc_warps,
                                          .warp_tiles = tc_warp_tiles(a.head_dim)};
    std::size_t const rows = config.warps * 16 * config.warp_tiles;
    LaunchDims const dims{.grid = {static_cast<unsigned>(a.heads), static_cast<unsigned>((a.q_len + rows - 1) / rows),
                                   static_cast<unsigned>(a.batch)},
                          .block = {config.warps * 32, 1, 1},
                          .shared_bytes = kernels::attention_shared_bytes(config)};
    KernelKey key;
    key << "attention/" << kernels::attention_name(config) << "/" << ptx::to_string(runner.target());
    runner.run(
        key.view(), [config] { return kernels::attention(config); }, dims, f.q, f.k, f.v, f.out, f.mask, f.q_len,
        f.kv_len, f.heads, f.kv_heads, f.query_offset, f.query_position, f.causal, f.scale_log2, f.mask_batch,
        f.mask_head, f.mask_row);
}

// The partial (max, sum, O) states of every output row when the keys are split across blocks, in
// a temporary, and attention_combine merging them into out.
class SplitStates {
public:
    SplitStates(KernelRunner& runner, op::Attention const& a, unsigned splits, unsigned d)
        : rows_(a.batch * a.q_len * a.heads), splits_(splits), d_(d) {
        if (splits > 1) buffer_.emplace(runner, kernels::attention_partial_bytes(rows_, splits, d));
    }
    [[nodiscard]] bool partial() const noexcept { return buffer_.has_value(); }
    [[nodiscard]] std::uint64_t address() const noexcept { return buffer_ ? buffer_->address() : 0; }

    void combine(KernelRunner& runner, DType type, std::uint64_t out) const {
        if (!buffer_) return;
        KernelKey key;
        key << "attention_combine/" << to_string(type) << "/d" << d_ << "/" << ptx::to_string(runner.target());
        LaunchDims const dims{.grid = {static_cast<unsigned>(rows_), 1, 1},
                              .block = {kernels::attention_combine_threads, 1, 1}};
        unsigned const d = d_;
        runner.run(
            key.view(), [type, d] { return kernels::attention_combine(type, d); }, dims, buffer_->address(), out,
            static_cast<std::uint32_t>(rows_), static_cast<std::uint32_t>(splits_));
    }

private:
    std::uint64_t rows_;
    unsigned splits_, d_;
    std::optional<TemporaryBuffer> buffer_;
};

// Decode (a few query rows a key/value head, no mask, the tensor cores' head_dims): one block a
// split of 128 keys of a (batch, key/value head), every key read once, the splits merged by
// attention_combine.
bool takes_decode(op::Attention const& a, OpViews const& v) {
    return v.in[0].dtype != DType::f32 && aligned(a, v) && !a.has_mask &&
           a.q_len * (a.heads / a.kv_heads) <= decode_rows &&
           std::ranges::find(tensor_core_head_dims, a.head_dim) != tensor_core_head_dims.end();
}

void run_decode(KernelRunner& runner, op::Attention const& a, OpViews const& v, FrameArguments const& f) {
    DType const type = v.in[0].dtype;
    auto const d = static_cast<unsigned>(a.head_dim);
    // Keys any row sees: the causal limit of the last row may end them early (known here unless the
    // position is stored; then blocks past it find no key and write empty states).
    std::int64_t const seen =
        a.causal && !a.stored_position
            ? std::clamp<std::int64_t>(std::int64_t{f.query_offset} + static_cast<std::int64_t>(a.q_len), 0,
                                       static_cast<std::int64_t>(a.kv_len))
            : static_cast<std::int64_t>(a.kv_len);
    auto const splits = static_cast<unsigned>(std::max<std::int64_t>((seen + decode_split - 1) / decode_split, 1));
    SplitStates const states(runner, a, splits, d);
    kernels::AttentionConfig const config{.algorithm = kernels::AttentionAlgorithm::decode,
                                          .element = type,
                                          .head_dim = d,
                                          .warps = 4,
                                          .partial = states.partial()};
    LaunchDims const dims{.grid = {splits, static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(a.batch)},
                          .block = {config.warps * 32, 1, 1},
                          .shared_bytes = kernels::attention_shared_bytes(config)};
    KernelKey key;
    key << "attention/" << kernels::attention_name(config) << "/" << ptx::to_string(runner.target());
    runner.run(
        key.view(), [config] { return kernels::attention(config); }, dims, f.q, f.k, f.v, f.out, f.mask, f.q_len,
        f.kv_len, f.heads, f.kv_heads, f.query_offset, f.query_position, f.causal, f.scale_log2, f.mask_batch,
        f.mask_head, f.mask_row, static_cast<std::uint32_t>(a.batch), static_cast<std::uint32_t>(splits),
        states.address());
    states.combine(runner, type, f.out);
}

void run_simt(KernelRunner& runner, op::Attention const& a, OpViews const& v, FrameArguments const& f) {
    DType const type = v.in[0].dtype;
    auto const d = static_cast<unsigned>(a.head_dim);
    std::size_t const group = a.heads / a.kv_heads, group_rows = a.q_len * group;
    unsigned const rows = group_rows <= 1 ? 1 : group_rows <= 2 ? 2 : 4;
    std::size_t const workers = a.batch * a.kv_heads * ((group_rows + rows - 1) / rows);
    // Enough warps to keep every multiprocessor busy (16 a multiprocessor), each split at least
    // min_split_keys long, or one tile long where such splits would leave multiprocessors without
    // a warp (a decode step over a short cache).
    auto const multiprocessors = static_cast<std::size_t>(std::max(runner.multiprocessor_count(), 1));
    std::size_t const wanted = multiprocessors * 16;
    std::size_t const long_splits = (a.kv_len + min_split_keys - 1) / min_split_keys;
    std::size_t const most = std::max<std::size_t>(
        workers * long_splits >= multiprocessors ? long_splits : (a.kv_len + split_tile - 1) / split_tile, 1);
    auto splits = static_cast<unsigned>(
        std::clamp<std::size_t>((wanted + workers - 1) / workers, 1, std::min<std::size_t>(most, 1024)));
    std::size_t const per_split = (a.kv_len + splits - 1) / splits;
    auto const split_keys = static_cast<std::uint32_t>(
        std::max<std::size_t>((per_split + split_tile - 1) / split_tile * split_tile, split_tile));
    splits = static_cast<unsigned>(std::max<std::size_t>((a.kv_len + split_keys - 1) / split_keys, 1));
    SplitStates const states(runner, a, splits, d);
    kernels::AttentionConfig const config{.algorithm = kernels::AttentionAlgorithm::simt,
                                          .element = type,
                                          .head_dim = d,
                                          .mask = f.mask != 0,
                                          .warps = kernels::attention_simt_warps(type, d, rows),
                                          .rows = rows,
                                          .partial = states.partial(),
                                          .aligned = aligned(a, v)};
    std::size_t const items = workers * splits;
    LaunchDims const dims{.grid = {static_cast<unsigned>((items + config.warps - 1) / config.warps), 1, 1},
                          .block = {config.warps * 32, 1, 1},
                          .shared_bytes = kernels::attention_shared_bytes(config)};
    KernelKey key;
    key << "attention/" << kernels::attention_name(config) << "/" << ptx::to_string(runner.target());
    runner.run(
        key.view(), [config] { return kernels::attention(config); }, dims, f.q, f.k, f.v, f.out, f.mask, f.q_len,
        f.kv_len, f.heads, f.kv_heads, f.query_offset, f.query_position, f.causal, f.scale_log2, f.mask_batch,
        f.mask_head, f.mask_row, static_cast<std::uint32_t>(a.batch), static_cast<std::uint32_t>(splits), split_keys,
        states.address());
    states.combine(runner, type, f.out);
}

}  // namespace

Support supports(KernelRunner const&, op::Attention const& a, OpViews const&) {
    if (a.head_dim > max_head_dim)
        return Support::no("cuda attention: head_dim " + std::to_string(a.head_dim) + " (the kernels take up to 256)");
    constexpr std::size_t limit = std::numeric_limits<std::int32_t>::max() / 2;
    if (a.q_len > limit || a.kv_len > limit ||
        a.batch * a.q_len * a.heads * a.head_dim > std::numeric_limits<std::uint32_t>::max() ||
        a.batch * a.kv_len * a.kv_heads > std::numeric_limits<std::uint32_t>::max() || a.batch > 65535 ||
        a.heads > 65535)
        return Support::no("cuda attention: sizes past the kernels' 32-bit indices");
    return Support::yes();
}

void run(KernelRunner& runner, op::Attention const& a, OpViews const& v) {
    if (v.out[0].numel() == 0) return;
    FrameArguments const f = frame_arguments(runner, a, v);
    if (takes_tensor_cores(a, v, runner.multiprocessor_count())) {
        if (takes_wgmma(runner, a, f))
            run_wgmma(runner, a, v, f);
        else
            run_tensor_cores(runner, a, v, f);
    } else if (takes_decode(a, v))
        run_decode(runner, a, v, f);
    else
        run_simt(runner, a, v, f);
}

}  // namespace rayo::cuda::ops
