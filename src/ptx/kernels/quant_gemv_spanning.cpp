// linear(x, w) for one row of x with x held in registers: a group of threads spans a whole weight
// row, thread t of the group taking the same 32 values of every row, eight threads a 256-value
// block (j = t%8):
//   q4_k: qs bytes [16j, 16j+16) of block t/8, values 64c + 16h + i as low nibbles and
//         64c + 32 + 16h + i as high ones, c = j/2, h = j%2, i < 16;
//   q5_k: the same, and their fifth bits from qh bytes [16h, 16h+16) (bits 2c and 2c + 1);
//   q6_k: values 128h + 32p + 8u + i, h = j/4, u = j%4, p < 4, i < 8 (see the q6_k branch);
//   q8_0 / q4_0: the 32-value block j of the eight in the 256 values, values 32j + i.
// Its x values, their sums and their scale are loaded once; per row it reads the block's header or
// scales and its own code bytes: q4_k / q5_k straight from global memory into registers (32 / 48
// bytes, a step ahead), or, streamed, from a ring of slots in shared memory that its warp fills by
// cp.async with the bytes its four 256-value blocks span (q6_k's 210-byte blocks and q8_0's / q4_0's
// 34- and 18-byte ones are only 2-byte aligned: words are read from the 4-byte boundary below and
// realigned by prmt).
//
// x: each thread loads its 32 values from global memory and quantizes them to int16,
// q = rni(x·32767/amax) with amax over the block's 256 values, found among its 8 threads (consecutive
// lanes) by three shuffles; the 1.5·2^23 trick gives q as the low 16 bits of fma(x, iscale,
// 1.5·2^23). That keeps ~15 bits of x like the q8_k main + residual records, with no shared memory
// and no barrier before the first product. Products by dp2a (int16 pairs × u8 codes): q4_k low
// nibbles masked 0x0f, high ones masked 0xf0 (16q; the chain's sum is then divided by 16, exactly);
// q6_k's 6-bit codes as bytes, the −32 offset through x's sums. Bounds (int32): a q4_k chain of 16
// values is ≤ 16·15·32767 ≈ 7.9e6 (×16 ≈ 1.3e8 for high nibbles), times a 6-bit scale, two chains:
// ≤ 9.9e8 < 2^31; q6_k quarters are added in pairs in int32 (see the q6_k branch).
//
// The rows of a step (`batch` per group, `groups` per CTA) are reduced across each warp by a
// transposing butterfly (lane b ends with row b's sum); the warps' sums wait in shared memory until
// the CTA's last step and are then added in a fixed order: results do not depend on timing, and the
// warps never wait for each other between steps.
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rayo/ptx/kernels/elementwise.hpp"
#include "rayo/ptx/kernels/quant.hpp"
#include "ptx/kernels/quant_words.hpp"

namespace rayo::ptx::kernels {

namespace {

using quant_detail::halves_as_float;

constexpr float round_magic = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer in the low bits

// Σ over 4·codes.size() values, added to `start`: x as words of int16 pairs (two a word of codes),
// the codes as words of bytes (u8, or s8 where `signed_codes`).
Reg dot(Kernel& k, std::span<Reg const> x, std::span<Reg const> codes, Operand start, bool signed_codes = false) {
    Reg s = k.mov(Type::s32, start);
    for (std::size_t t = 0; t < codes.size(); ++t) {
        s = k.dp2a(x[2 * t], codes[t], s, false, true, signed_codes);
        s = k.dp2a(x[2 * t + 1], codes[t], s, true, true, signed_codes);
    }
    return s;
}

Reg dot16(Kernel& k, std::vector<Reg> const& x, std::vector<Reg> const& codes) { return dot(k, x, codes, 0); }

// The warp-wide sums of `values` (one per row of the batch): lane b (b < batch) ends with row b's.
Reg transposed_warp_sum(Kernel& k, std::vector<Reg> values, Reg lane) {
    unsigned delta = 1;
    while (values.size() > 1) {
        // Lanes with this bit set keep the odd rows of the remaining ones, the others the even rows.
        Reg const odd = k.setp(Cmp::ne, k.and_(lane, delta), 0);
        std::vector<Reg> kept;
        for (std::size_t i = 0; i < values.size(); i += 2) {
            Reg const keep = k.selp(values[i + 1], values[i], odd, Type::f32);
            Reg const give = k.selp(values[i], values[i + 1], odd, Type::f32);
            kept.push_back(k.add(keep, k.shfl(ShuffleMode::bfly, give, delta)));
        }
        values = kept;
        delta *= 2;
    }
    Reg sum = values[0];
    for (; delta < 32; delta *= 2) sum = k.add(sum, k.shfl(ShuffleMode::bfly, sum, delta));
    return sum;
}

// What a thread reads of one weight row: q4_k the block's header (d, dmin, scales) and its 16 qs
// bytes; q6_k its 8 + 8 ql bytes, 8 qh bytes, the block's 8 scales of its half and d.
struct RowWords {
    std::vector<Reg> words;
};

// The configuration, checked, and what follows from it: the form the weights take (registers,
// pipelined, per-warp rings, bulk copies), the sizes, and where things lie in shared memory.
struct Plan {
    bool q6 = false, q5 = false;
    bool nibbles = false;  // q4_k's lane layout, which q5_k shares
    bool small = false;    // q8_0 / q4_0: a 32-value block a thread
    unsigned group_threads = 0, blocks = 0, block_bytes = 0, row_bytes = 0, group_warps = 0, warps = 0;
    unsigned batch = 0, stages = 0;
    bool bulk = false, streamed = false, pipelined = false, formed = false, rms_norm = false;
    unsigned first_requests = 0, weights_early = 0;
    // Shared memory: (share_x) x as int16 [blocks·256] and its scales f32 [blocks], (streamed) the
    // warps' rings, then the warps' sums of every step.
    std::uint32_t scales_at = 0, ring_at = 0, slot_bytes = 0;
    // bulk: the slots of whole steps (16-byte aligned, 16 bytes apart: q6_k's words read from the
    // 4-byte boundary below a field reach 2 bytes past the row), then a full and an empty mbarrier a slot.
    std::uint32_t step_bytes = 0, bulk_slot_bytes = 0, bulk_at = 0, barriers_at = 0;
    // rms_norm: each warp's Σx² and Σ(x·2^-96)² (for squares past f32's range), then every step's sums.
    std::uint32_t squares_at = 0, sums_at = 0;
};

// The weight types and row lengths the kernel takes, and the forms it has.
void check_shape(QuantGemvSpanningConfig const& config, bool q6, bool nibbles, bool small) {
    if (!nibbles && !q6 && !small)
        throw BuildError("ptx kernels: quant_gemv_spanning takes q4_k, q5_k, q6_k, q8_0 or q4_0 weights, not " +
                         std::string(to_string(config.weight)));
    if (config.blocks_per_row < 1 || config.blocks_per_row > quant_gemv_spanning_max_blocks)
        throw BuildError("ptx kernels: quant_gemv_spanning spans 1 to " +
                         std::to_string(quant_gemv_spanning_max_blocks) + " blocks per row, not " +
                         std::to_string(config.blocks_per_row));
    if (config.batch != 1 && config.batch != 2 && config.batch != 4)
        throw BuildError("ptx kernels: quant_gemv_spanning takes 1, 2 or 4 rows per step, not " +
                         std::to_string(config.batch));
    if (config.stages == 1 || config.stages > quant_gemv_spanning_max_stages)
        throw BuildError("ptx kernels: quant_gemv_spanning streams through 2 to " +
                         std::to_string(quant_gemv_spanning_max_stages) + " stages (or 0: loads into registers), not " +
                         std::to_string(config.stages));
    if ((q6 || small) && config.stages == 0)
        throw BuildError("ptx kernels: quant_gemv_spanning streams " + std::string(to_string(config.weight)) +
                         " weights (2-byte aligned blocks): stages must be 2 to " +
                         std::to_string(quant_gemv_spanning_max_stages));
    if (q6 && config.blocks_per_row % 8 != 0)
        throw BuildError(
            "ptx kernels: quant_gemv_spanning needs q6_k rows of a multiple of 8 blocks (16-byte aligned rows), not " +
            std::to_string(config.blocks_per_row));
}

// The block's size, registers and the early start's options.
void check_launch(QuantGemvSpanningConfig const& config, unsigned group_threads) {
    if (config.groups < 1 || config.groups * group_threads > 1024)
        throw BuildError("ptx kernels: quant_gemv_spanning: " + std::to_string(config.groups) + " groups of " +
                         std::to_string(group_threads) + " threads do not make a block of 1 to 1024 threads");

    if (config.max_registers != 0 && (config.max_registers < 24 || config.max_registers > 255 ||
                                      config.max_registers * config.groups * group_threads > 65536))
        throw BuildError("ptx kernels: quant_gemv_spanning: .maxnreg " + std::to_string(config.max_registers) +
                         " is not within 24..255 or does not let a block of " +
                         std::to_string(config.groups * group_threads) + " threads fit 65536 registers");
    if (config.prefetch_steps > quant_gemv_spanning_max_prefetch_steps)
        throw BuildError("ptx kernels: quant_gemv_spanning prefetches at most " +
                         std::to_string(quant_gemv_spanning_max_prefetch_steps) + " steps, not " +
                         std::to_string(config.prefetch_steps));
}

Plan plan_of(QuantGemvSpanningConfig const& config) {
    Plan p;
    p.q6 = config.weight == DType::q6_k;
    p.q5 = config.weight == DType::q5_k;
    p.nibbles = config.weight == DType::q4_k || p.q5;
    p.small = small_block_weights(config.weight);
    check_shape(config, p.q6, p.nibbles, p.small);
    p.group_threads = quant_gemv_spanning_group_threads(config.blocks_per_row);
    check_launch(config, p.group_threads);

    p.blocks = config.blocks_per_row;
    p.block_bytes = quant_gemv_spanning_group_bytes(config.weight);  // of 256 values
    p.row_bytes = p.block_bytes * p.blocks;
    p.group_warps = p.group_threads / 32;
    p.warps = config.groups * p.group_warps;
    p.batch = config.batch;
    p.stages = config.stages;
    p.bulk = config.bulk;
    if (p.bulk && p.stages < 2)
        throw BuildError("ptx kernels: quant_gemv_spanning: bulk copies need a ring of 2 to " +
                         std::to_string(quant_gemv_spanning_max_stages) + " slots, not " + std::to_string(p.stages));
    p.streamed = p.stages > 0 && !p.bulk;  // per-warp cp.async rings
    p.pipelined = p.stages == 0 && config.pipelined;
    // The steps whose weights are requested before griddepcontrol.wait: as many of the form's first
    // requests (a ring's stages − 1 steps, the pipelined form's one) as asked for.
    p.first_requests = p.stages > 0 ? p.stages - 1 : p.pipelined ? 1 : 0;
    p.weights_early = config.weight_steps_before_wait;
    if (p.weights_early > 0 && (!config.early_start || p.weights_early > p.first_requests))
        throw BuildError("ptx kernels: quant_gemv_spanning: " + std::to_string(p.weights_early) +
                         " steps of weights before the wait need early_start and at most the form's " +
                         std::to_string(p.first_requests) + " first requests");
    if (config.x_before_wait && !config.early_start)
        throw BuildError("ptx kernels: quant_gemv_spanning: x before the wait needs early_start");
    p.formed = config.input != GemvInput::x;
    p.rms_norm = config.input == GemvInput::rms_norm;

    p.scales_at = 512 * p.blocks;
    p.ring_at = config.share_x ? p.scales_at + 16 * ((p.blocks + 3) / 4) : 0;
    p.slot_bytes = quant_gemv_spanning_slot_row_bytes(config.weight);
    p.step_bytes = config.groups * p.batch * p.row_bytes;
    p.bulk_slot_bytes = p.step_bytes + 16;
    p.bulk_at = (p.ring_at + 15) / 16 * 16;
    p.barriers_at = p.bulk_at + p.stages * p.bulk_slot_bytes;
    p.squares_at = p.bulk ? p.barriers_at + 16 * p.stages : p.ring_at + p.warps * p.stages * p.batch * p.slot_bytes;
    p.sums_at = p.squares_at + (p.rms_norm ? 8 * p.warps : 0);
    return p;
}

std::string kernel_name(QuantGemvSpanningConfig const& config, Plan const& p) {
    return "rayo_quant_gemv_spanning_" + std::string(to_string(config.weight)) + "_b" + std::to_string(p.blocks) +
           "_g" + std::to_string(config.groups) + "_r" + std::to_string(p.batch) +
           (p.bulk        ? "_bulk" + std::to_string(p.stages)
            : p.streamed  ? "_s" + std::to_string(p.stages)
            : p.pipelined ? "_pipelined"
                          : "") +
           (config.share_x ? "_xs" : "") + (config.prefetch_steps ? "_p" + std::to_string(config.prefetch_steps) : "") +
           (config.early_start ? "_early" : "") + (p.weights_early ? "_w" + std::to_string(p.weights_early) : "") +
           (config.x_before_wait ? "_xw" : "") + (config.bias ? "_bias" : "") +
           (config.input == GemvInput::swiglu     ? "_swiglu"
            : config.input == GemvInput::rms_norm ? "_rms_norm"
                                                  : "");
}

// The kernel's stages, emitted in order by build(): parameters and the thread's place, the early
// prefetch, x (requested, formed, quantized), the first steps' weight requests in the chosen form,
// the weight type's reads and products, the steps, and the CTA's results.
class SpanningGemv {
public:
    SpanningGemv(Kernel& kernel, QuantGemvSpanningConfig const& configuration, Plan const& checked)
        : k(kernel), config(configuration), plan(checked) {}

    void build();

private:
    void declare_parameters();
    void locate_thread();
    void prefetch_first_steps();
    void place_x_runs();
    void set_up_ring();
    void set_up_direct_loads();
    void request_first_steps();
    void set_up_bulk();
    void set_up_nibbles();
    void set_up_small();
    void set_up_q6();
    void run_steps();
    [[nodiscard]] std::vector<RowWords> bulk_step_rows(Reg step);
    [[nodiscard]] std::vector<RowWords> streamed_step_rows(Reg step);
    [[nodiscard]] std::vector<RowWords> direct_step_rows(Reg step);
    [[nodiscard]] Reg rms_norm_scale();
    void store_results(std::optional<Reg> row_scale);

    // Row r of a step (clamped: a partial last step re-reads the last row and writes nothing for it).
    Reg row_address(Reg step_first, unsigned r);
    Reg sum_words(std::vector<Reg> const& words);
    std::vector<Reg> quantize8(std::span<Reg const> v, Reg iscale);
    Reg inverse_scale(Reg amax);
    void form(std::vector<Reg>& values, std::vector<Reg> const& seconds, Reg const* counted);
    void store_squares(Reg squares_at);
    void request_x();
    void share_x();
    std::vector<Reg> quantized_x();
    void wait_for_previous();
    void issue(Reg step_first, Reg slot);
    void next_slot(Reg slot);
    void load_row(Reg step_first, unsigned r, RowWords const& into);
    RowWords fresh_words();
    void bulk_issue(Reg step_first, Reg slot);

    Kernel& k;
    QuantGemvSpanningConfig const& config;
    Plan const& plan;

    Reg weights, x, out, n;
    std::optional<Reg> bias, second, eps;
    Reg tid, lane, warp, group, warp_in_group, t, block, j, active, b;
    Reg last_row, first, stride, group_first;
    Reg shared, ones;
    // This thread's 32 values of x, as runs of 8 at x_runs (floats from its block's start; see the
    // per-type set_up_ stages), 4 words a run.
    std::vector<Reg> x_runs;
    Reg x_block, x_shared_block, x_scale;
    std::vector<Reg> x_values;       // own x: the 32 floats as loaded
    std::vector<Reg> second_values;  // and the formed input's second operand at the same places
    Reg squares, scaled_squares;     // rms_norm's, of the values this thread formed
    std::vector<Reg> x_words;        // x quantized: int16 pairs
    bool waited = false;
    // streamed
    Reg warp_blocks, span_start, lead, chunks, copy_from, ring, slot_issue, slot_read;
    unsigned copies_per_lane = 0;
    // direct (q4_k, q5_k from global memory)
    Reg qs_in_block, qh_in_block;
    unsigned row_words = 0;
    std::vector<RowWords> pending;
    // bulk
    Reg producer, bulk_slots, full_barriers, empty_barriers;
    // the weight type's: its words of a slot row, and the row's partial product from them
    Reg slot_block;
    std::function<Reg(RowWords const&)> partial;
    std::function<RowWords(Reg)> read_slot_row;
    // the steps
    Reg sums, local_step;
};

void SpanningGemv::build() {
    declare_parameters();
    locate_thread();
    prefetch_first_steps();
    shared = k.shared_address(k.dynamic_shared(16));
    ones = k.mov(Type::u32, 0x01010101);
    place_x_runs();
    x_block = k.add(x, k.mul_wide(b, 1024));
    x_shared_block = k.add(shared, k.mul(b, 512));
    squares = k.mov(Type::f32, 0.0f);
    scaled_squares = k.mov(Type::f32, 0.0f);

    // early_start: let the next kernel launch, read x (x_before_wait), then wait for the one before,
    // once: here, or (weights that no running kernel writes) after the first steps' weights have
    // been requested.
    waited = !config.early_start;
    if (plan.weights_early == 0) wait_for_previous();
    set_up_ring();
    set_up_direct_loads();
    request_first_steps();
    set_up_bulk();
    wait_for_previous();

    if (!config.x_before_wait) request_x();  // else wait_for_previous requested it before its wait
    x_words = quantized_x();

    // The warp's block this lane reads (the last one for lanes past the row's end).
    // (bulk: the slot holds whole rows, so the thread's own block.)
    slot_block = plan.bulk ? b : k.min(k.shr(lane, 3), k.sub(warp_blocks, 1));
    if (plan.nibbles)
        set_up_nibbles();
    else if (plan.small)
        set_up_small();
    else
        set_up_q6();

    run_steps();
    if (plan.streamed) k.cp_async_wait(0);  // no copy outlives the kernel
    k.bar_sync();
    std::optional<Reg> const row_scale = plan.rms_norm ? std::optional(rms_norm_scale()) : std::nullopt;
    store_results(row_scale);
}

void SpanningGemv::declare_parameters() {
    k.max_threads(32 * plan.warps);
    if (config.max_registers != 0) k.max_registers(config.max_registers);
    weights = k.cvta_to_global(k.param(Type::u64, "w"));
    x = k.cvta_to_global(k.param(Type::u64, "x"));
    out = k.cvta_to_global(k.param(Type::u64, "out"));
    n = k.param(Type::u32, "n");
    if (config.bias) bias = k.cvta_to_global(k.param(Type::u64, "bias"));
    if (plan.formed) second = k.cvta_to_global(k.param(Type::u64, "second"));
    if (plan.rms_norm) eps = k.param(Type::f32, "eps");
}

// The thread's group and place in it, its block and lane within the block, and the CTA's rows.
void SpanningGemv::locate_thread() {
    tid = k.special(Special::tid_x);
    lane = k.and_(tid, 31);
    warp = k.shr(tid, 5);
    group = k.div(warp, plan.group_warps);
    warp_in_group = k.sub(warp, k.mul(group, plan.group_warps));
    t = k.sub(tid, k.mul(group, plan.group_threads));  // thread within the group

    // This thread's block and lane within it (the group's last warp may run past the row's end:
    // those lanes read the warp's last block and count nothing).
    block = k.shr(t, 3);
    j = k.and_(t, 7);
    active = k.setp(Cmp::lt, block, plan.blocks);
    b = k.min(block, plan.blocks - 1);

    // The rows: CTA-uniform steps of groups·batch rows.
    last_row = k.sub(n, 1);
    first = k.mul(k.special(Special::ctaid_x), config.groups * plan.batch);
    stride = k.mul(k.special(Special::nctaid_x), config.groups * plan.batch);
    group_first = k.mul(group, plan.batch);
}

Reg SpanningGemv::row_address(Reg step_first, unsigned r) {
    Reg const row = k.min(k.add(k.add(step_first, group_first), r), last_row);
    return k.add(weights, k.mul_wide(row, plan.row_bytes));
}

// Before anything that reads memory the previous kernel may write: the first steps' weight rows
// into L2 (a step's groups·batch rows are contiguous), by one thread.
void SpanningGemv::prefetch_first_steps() {
    if (config.prefetch_steps == 0) return;
    k.if_then(k.setp(Cmp::eq, tid, 0), [&] {
        for (unsigned s = 0; s < config.prefetch_steps; ++s) {
            Reg const step_first = k.add(first, k.mul(stride, s));
            k.if_then(k.setp(Cmp::lt, step_first, n), [&] {
                Reg const rows = k.min(k.sub(n, step_first), config.groups * plan.batch);
                k.cp_async_bulk_prefetch_l2(Address(k.add(weights, k.mul_wide(step_first, plan.row_bytes))),
                                            k.mul(rows, plan.row_bytes));
            });
        }
    });
}

Reg SpanningGemv::sum_words(std::vector<Reg> const& words) {
    Reg s = k.mov(Type::s32, 0);
    for (Reg w : words) s = k.dp2a(w, ones, s, false, true, false);
    return s;
}

// x as int16 pairs: the words of 8 values from fma(x, iscale, 1.5·2^23)'s low halves.
std::vector<Reg> SpanningGemv::quantize8(std::span<Reg const> v, Reg iscale) {
    std::vector<Reg> words;
    for (std::size_t i = 0; i < v.size(); i += 2) {
        Reg const lo = k.bitcast(Type::u32, k.fma(v[i], iscale, round_magic));
        Reg const hi = k.bitcast(Type::u32, k.fma(v[i + 1], iscale, round_magic));
        words.push_back(k.prmt(lo, hi, 0x5410));
    }
    return words;
}

Reg SpanningGemv::inverse_scale(Reg amax) {  // amax = 0: iscale 0 and every q 0 (not 0·inf)
    return k.selp(k.mul(k.rcp_approx(amax), 32767.0f), 0.0f, k.setp(Cmp::gt, amax, 0.0f), Type::f32);
}

// Where this thread's runs of x lie in its block: from shared memory (share_x), or loaded straight
// from global memory, the block's largest magnitude found among its 8 threads (consecutive lanes)
// by shuffles, and quantized in registers.
void SpanningGemv::place_x_runs() {
    if (plan.nibbles) {
        Reg const lo_at = k.add(k.shl(k.shr(j, 1), 6), k.shl(k.and_(j, 1), 4));  // 64c + 16h, c = j/2, h = j%2
        x_runs = {lo_at, k.add(lo_at, 8), k.add(lo_at, 32), k.add(lo_at, 40)};
    } else if (plan.small) {
        Reg const x_at = k.shl(j, 5);  // the thread's 32-value block: values 32j + i
        x_runs = {x_at, k.add(x_at, 8), k.add(x_at, 16), k.add(x_at, 24)};
    } else {
        Reg const x_at = k.add(k.shl(k.shr(j, 2), 7), k.shl(k.and_(j, 3), 3));  // 128h + 8u, h = j/4, u = j%4
        x_runs = {x_at, k.add(x_at, 32), k.add(x_at, 64), k.add(x_at, 96)};
    }
}

// The formed input's value from x and its second operand; rms_norm's squares summed on the way,
// of the values `counted` holds for (every value where it is null).
void SpanningGemv::form(std::vector<Reg>& values, std::vector<Reg> const& seconds, Reg const* counted) {
    auto const kept = [&](Reg v) { return counted ? k.selp(v, 0.0f, *counted, Type::f32) : v; };
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (plan.rms_norm) {
            Reg const scaled = k.mul(values[i], 0x1p-96f);
            k.mov(squares, k.fma(values[i], kept(values[i]), squares));
            k.mov(scaled_squares, k.fma(scaled, kept(scaled), scaled_squares));
            values[i] = k.mul(values[i], seconds[i]);
        } else {
            values[i] = k.mul(emit_unary(k, Op::silu, values[i]), seconds[i]);
        }
    }
}

// A warp's squares into its slots (before the CTA's last barrier, read after it).
void SpanningGemv::store_squares(Reg squares_at) {
    Reg total = squares, scaled_total = scaled_squares;
    for (int delta = 16; delta >= 1; delta /= 2) {
        total = k.add(total, k.shfl(ShuffleMode::bfly, total, delta));
        scaled_total = k.add(scaled_total, k.shfl(ShuffleMode::bfly, scaled_total, delta));
    }
    k.predicated(k.setp(Cmp::eq, lane, 0), true, [&] {
        k.st(Space::shared, Type::f32, Address(k.add(squares_at, k.shl(warp, 3))), total);
        k.st(Space::shared, Type::f32, Address(k.add(squares_at, k.shl(warp, 3)), 4), scaled_total);
    });
}

// x is read once: after the wait, or (x_before_wait: no running kernel writes it) just before it,
// so that its loads overlap the kernel before's last blocks. Shared x is then stored whole before
// the wait; a thread's own x is only requested there and quantized after the wait and the
// weights' requests, which its loads' latency would otherwise hold back.
void SpanningGemv::request_x() {
    if (config.share_x) {
        share_x();
        return;
    }
    for (Reg run : x_runs) {
        Reg const at = k.add(x_block, k.mul_wide(run, 4));
        for (Reg r : k.ld_vector(Space::global, Type::f32, 4, Address(at), Cache::nc)) x_values.push_back(r);
        for (Reg r : k.ld_vector(Space::global, Type::f32, 4, Address(at, 16), Cache::nc)) x_values.push_back(r);
        if (!plan.formed) continue;
        Reg const second_at = k.add(k.add(*second, k.mul_wide(b, 1024)), k.mul_wide(run, 4));
        for (Reg r : k.ld_vector(Space::global, Type::f32, 4, Address(second_at), Cache::nc))
            second_values.push_back(r);
        for (Reg r : k.ld_vector(Space::global, Type::f32, 4, Address(second_at, 16), Cache::nc))
            second_values.push_back(r);
    }
}

// Once per CTA into shared memory: a warp per 256 values, lane L holding values 8L..8L+7.
void SpanningGemv::share_x() {
    Reg const xb = k.reg(Type::u32);
    k.for_range(xb, warp, plan.blocks, plan.warps, [&] {
        Reg const at = k.add(x, k.add(k.mul_wide(xb, 1024), k.mul_wide(lane, 32)));
        auto v = k.ld_vector(Space::global, Type::f32, 4, Address(at), Cache::nc);
        auto const v1 = k.ld_vector(Space::global, Type::f32, 4, Address(at, 16), Cache::nc);
        v.insert(v.end(), v1.begin(), v1.end());
        if (plan.formed) {
            Reg const second_at = k.add(*second, k.add(k.mul_wide(xb, 1024), k.mul_wide(lane, 32)));
            auto s = k.ld_vector(Space::global, Type::f32, 4, Address(second_at), Cache::nc);
            auto const s1 = k.ld_vector(Space::global, Type::f32, 4, Address(second_at, 16), Cache::nc);
            s.insert(s.end(), s1.begin(), s1.end());
            form(v, s, nullptr);
        }
        Reg amax = k.abs(v[0]);
        for (int i = 1; i < 8; ++i) amax = k.max(amax, k.abs(v[i]));
        for (int delta = 16; delta >= 1; delta /= 2) amax = k.max(amax, k.shfl(ShuffleMode::bfly, amax, delta));
        Reg const carry = quant_detail::warp_non_finite_sum(k, v);  // x's scale carries a NaN in x
        Reg const row_at = k.add(shared, k.add(k.mul(xb, 512), k.shl(lane, 4)));
        k.st_vector(Space::shared, Type::b32, Address(row_at), quantize8(v, inverse_scale(amax)));
        k.predicated(k.setp(Cmp::eq, lane, 0), true, [&] {
            k.st(Space::shared, Type::f32, Address(k.add(shared, k.shl(xb, 2)), plan.scales_at),
                 k.fma(amax, 1.0f / 32767.0f, carry));
        });
    });
    if (plan.rms_norm) store_squares(k.add(shared, plan.squares_at));
    k.bar_sync();
}

// This thread's x words and x_scale: read from shared memory, or its own x formed and quantized.
std::vector<Reg> SpanningGemv::quantized_x() {
    if (config.share_x) {
        x_scale = k.selp(k.ld(Space::shared, Type::f32, Address(k.add(shared, k.shl(b, 2)), plan.scales_at)), 0.0f,
                         active, Type::f32);
        std::vector<Reg> words;
        for (Reg run : x_runs)
            for (Reg w : k.ld_vector(Space::shared, Type::b32, 4, Address(k.add(x_shared_block, k.shl(run, 1)))))
                words.push_back(w);
        return words;
    }
    if (plan.formed) {
        form(x_values, second_values, &active);
        if (plan.rms_norm) store_squares(k.add(shared, plan.squares_at));
    }
    Reg amax = k.abs(x_values[0]);
    for (std::size_t i = 1; i < x_values.size(); ++i) amax = k.max(amax, k.abs(x_values[i]));
    for (int delta = 1; delta < 8; delta *= 2) amax = k.max(amax, k.shfl(ShuffleMode::bfly, amax, delta));
    x_scale = k.selp(k.fma(amax, 1.0f / 32767.0f, quant_detail::non_finite_sum(k, x_values)), 0.0f, active, Type::f32);
    return quantize8(x_values, inverse_scale(amax));
}

void SpanningGemv::wait_for_previous() {
    if (waited) return;
    k.griddepcontrol_launch_dependents();
    if (config.x_before_wait) request_x();
    k.griddepcontrol_wait();
    waited = true;
}

// streamed: warp w copies the bytes its four blocks of a row span (q6_k: from the 16-byte boundary
// below them) into slot rows of its ring by cp.async, 16 bytes a lane and copy.
void SpanningGemv::set_up_ring() {
    warp_blocks = k.min(k.sub(k.mov(Type::u32, plan.blocks), k.shl(warp_in_group, 2)), 4);
    span_start = k.mul(warp_in_group, 4 * plan.block_bytes);                      // within the row
    lead = plan.q6 && !plan.bulk ? k.and_(span_start, 15) : k.mov(Type::u32, 0);  // bytes before the first block
    chunks = k.shr(k.add(k.fma(warp_blocks, plan.block_bytes, lead), 15), 4);
    copy_from = k.cvt(Type::u64, k.sub(span_start, lead));
    ring = k.add(k.add(shared, plan.ring_at), k.mul(warp, plan.stages * plan.batch * plan.slot_bytes));
    copies_per_lane = (plan.slot_bytes / 16 + 31) / 32;
    slot_issue = k.mov(Type::u32, plan.streamed ? plan.stages - 1 : 0);
    slot_read = k.mov(Type::u32, 0);
}

void SpanningGemv::issue(Reg step_first, Reg slot) {
    Reg const slot_at = k.add(ring, k.mul(slot, plan.batch * plan.slot_bytes));
    for (unsigned r = 0; r < plan.batch; ++r) {
        Reg const from = k.add(row_address(step_first, r), copy_from);
        for (unsigned i = 0; i < copies_per_lane; ++i) {
            Reg const chunk = k.add(lane, 32 * i);
            k.predicated(k.setp(Cmp::lt, chunk, chunks), true, [&] {
                Reg const at = k.shl(chunk, 4);
                k.cp_async(k.add(slot_at, k.add(at, r * plan.slot_bytes)), Address(k.add(from, k.cvt(Type::u64, at))),
                           16);
            });
        }
    }
}

void SpanningGemv::next_slot(Reg slot) {
    Reg const next = k.add(slot, 1);
    k.selp(slot, 0, next, k.setp(Cmp::eq, next, plan.stages));
}

// The direct form (q4_k, q5_k): a row's header, qs (and qh) words straight into registers,
// optionally a step ahead. Where a q4_k / q5_k thread's words lie in a block: the 16-byte header,
// qs bytes [16j, 16j+16) and (q5_k) qh bytes [16h, 16h+16), h = j%2.
void SpanningGemv::set_up_direct_loads() {
    qs_in_block = k.add(k.shl(j, 4), plan.q5 ? 48 : 16);
    qh_in_block = k.add(k.shl(k.and_(j, 1), 4), 16);
    row_words = plan.q5 ? 12 : 8;
}

void SpanningGemv::load_row(Reg step_first, unsigned r, RowWords const& into) {
    Reg const at = k.add(row_address(step_first, r), k.cvt(Type::u64, k.mul(b, plan.block_bytes)));
    std::span<Reg const> const words(into.words);
    k.ld_vector(words.first(4), Space::global, Type::u32, Address(at), Cache::nc);
    k.ld_vector(words.subspan(4, 4), Space::global, Type::u32, Address(k.add(at, k.cvt(Type::u64, qs_in_block))),
                Cache::nc);
    if (plan.q5)
        k.ld_vector(words.subspan(8), Space::global, Type::u32, Address(k.add(at, k.cvt(Type::u64, qh_in_block))),
                    Cache::nc);
}

RowWords SpanningGemv::fresh_words() {
    RowWords w;
    for (unsigned i = 0; i < row_words; ++i) w.words.push_back(k.reg(Type::u32));
    return w;
}

// The first steps' weights, requested before x is loaded: pipelined, the first step's rows into
// registers; streamed, the first stages − 1 steps into the ring.
void SpanningGemv::request_first_steps() {
    if (plan.pipelined) {
        // The next step's rows are loaded while this one's are multiplied; the first step's while x
        // is loaded and quantized.
        for (unsigned r = 0; r < plan.batch; ++r) pending.push_back(fresh_words());
        k.if_then(k.setp(Cmp::lt, first, n), [&] {
            for (unsigned r = 0; r < plan.batch; ++r) load_row(first, r, pending[r]);
        });
        wait_for_previous();
    }
    if (plan.streamed) {
        for (unsigned s = 0; s + 1 < plan.stages; ++s) {
            if (s == plan.weights_early) wait_for_previous();
            Reg const step_first = k.add(first, k.mul(stride, s));
            k.if_then(k.setp(Cmp::lt, step_first, n), [&] { issue(step_first, k.mov(Type::u32, s)); });
            k.cp_async_commit();
        }
        wait_for_previous();
    }
}

// bulk: thread 0 sets up a full and an empty barrier a slot, then requests the first stages − 1
// steps, a bulk copy each (after griddepcontrol_wait but for the first weight_steps_before_wait:
// the weights may otherwise be what an earlier kernel writes). A full barrier's phase completes when
// its step's bytes have landed, an empty one's when every thread is done reading the slot.
void SpanningGemv::set_up_bulk() {
    producer = k.setp(Cmp::eq, tid, 0);
    bulk_slots = k.add(shared, plan.bulk_at);
    full_barriers = k.add(shared, plan.barriers_at);
    empty_barriers = k.add(shared, plan.barriers_at + 8 * plan.stages);
    if (!plan.bulk) return;
    k.if_then(producer, [&] {
        for (unsigned s = 0; s < plan.stages; ++s) {
            k.mbarrier_init(k.add(full_barriers, 8 * s), 1);
            k.mbarrier_init(k.add(empty_barriers, 8 * s), 32 * plan.warps);
        }
        k.fence_mbarrier_init();
    });
    k.bar_sync();
    auto const issue_steps = [&](unsigned from, unsigned to) {
        if (from < to)
            k.if_then(producer, [&] {
                for (unsigned s = from; s < to; ++s) bulk_issue(k.add(first, k.mul(stride, s)), k.mov(Type::u32, s));
            });
    };
    issue_steps(0, plan.weights_early);
    wait_for_previous();
    issue_steps(plan.weights_early, plan.stages - 1);
}

void SpanningGemv::bulk_issue(Reg step_first, Reg slot) {  // by thread 0
    k.if_then(k.setp(Cmp::lt, step_first, n), [&] {
        Reg const bytes = k.mul(k.min(k.sub(n, step_first), config.groups * plan.batch), plan.row_bytes);
        Reg const full = k.add(full_barriers, k.shl(slot, 3));
        k.mbarrier_arrive_expect_tx(full, bytes);
        k.cp_async_bulk_to_shared(k.add(bulk_slots, k.mul(slot, plan.bulk_slot_bytes)),
                                  Address(k.add(weights, k.mul_wide(step_first, plan.row_bytes))), bytes, full);
    });
}

// q4_k / q5_k: values 64c + 16h + i (low nibbles) and 64c + 32 + 16h + i (high), c = j/2, h = j%2;
// q5_k's fifth bits are bits 2c (low) and 2c + 1 (high) of qh byte 16h + i.
void SpanningGemv::set_up_nibbles() {
    bool const q5 = plan.q5;
    Reg const c = k.shr(j, 1);
    Reg const high_shift = k.shl(c, 1);
    std::vector<Reg> const x_lo(x_words.begin(), x_words.begin() + 8), x_hi(x_words.begin() + 8, x_words.end());
    Reg const x_sum_lo = sum_words(x_lo);
    Reg const x_sum_hi = sum_words(x_hi);

    // Scale and min words (get_scale_min_k4): sub-blocks 0-3 are header[1|2] & 0x3f; 4-7 take the
    // low (scales) or high (mins) nibbles of header[3] and the top two bits of header[1|2]. This
    // thread's pair 2c, 2c+1 are bytes 2(c%2), 2(c%2)+1 of its word.
    Reg const upper = k.setp(Cmp::ge, c, 2);
    Reg const mask_low = k.selp(0x0f0f0f0f, 0x3f3f3f3f, upper, Type::u32);
    Reg const mask_top = k.selp(0x30303030, 0, upper, Type::u32);
    Reg const select_lo = k.or_(k.shl(k.and_(c, 1), 1), 0x4440);
    Reg const select_hi = k.add(select_lo, 1);
    partial = [this, q5, x_lo, x_hi, x_sum_lo, x_sum_hi, upper, mask_low, mask_top, select_lo, select_hi,
               high_shift](RowWords const& words) {
        std::span<Reg const> const h = std::span(words.words).first(4), q = std::span(words.words).subspan(4, 4);
        auto const [d, dmin] = halves_as_float(k, h[0]);
        Reg const scw = k.or_(k.and_(k.selp(h[3], h[1], upper, Type::u32), mask_low), k.and_(k.shr(h[1], 2), mask_top));
        Reg const mw =
            k.or_(k.and_(k.selp(k.shr(h[3], 4), h[2], upper, Type::u32), mask_low), k.and_(k.shr(h[2], 2), mask_top));
        Reg const sc_lo = k.prmt(scw, 0, select_lo), sc_hi = k.prmt(scw, 0, select_hi);
        Reg const m_lo = k.prmt(mw, 0, select_lo), m_hi = k.prmt(mw, 0, select_hi);
        std::vector<Reg> lo, hi;
        for (std::size_t t = 0; t < 4; ++t) {
            if (q5) {  // codes up to 31: |Σ| ≤ 16·31·32767 a chain, times a 6-bit scale, twice: < 2^31
                Reg const bits = k.shr(words.words[8 + t], high_shift);
                lo.push_back(k.or_(k.and_(q[t], 0x0f0f0f0f), k.shl(k.and_(bits, 0x01010101), 4)));
                hi.push_back(k.or_(k.and_(k.shr(q[t], 4), 0x0f0f0f0f), k.shl(k.and_(bits, 0x02020202), 3)));
            } else {
                lo.push_back(k.and_(q[t], 0x0f0f0f0f));
                hi.push_back(k.and_(q[t], static_cast<std::int64_t>(0xf0f0f0f0u)));
            }
        }
        // q4_k's high nibbles stay in place (16q): exact, every term is a multiple of 16.
        Reg const s_hi = q5 ? dot16(k, x_hi, hi) : k.shr(dot16(k, x_hi, hi), 4);
        Reg const s = k.fma(dot16(k, x_lo, lo), k.bitcast(Type::s32, sc_lo), k.mul(s_hi, k.bitcast(Type::s32, sc_hi)));
        Reg const m = k.fma(x_sum_lo, k.bitcast(Type::s32, m_lo), k.mul(x_sum_hi, k.bitcast(Type::s32, m_hi)));
        Reg const block_sum = k.fma(k.cvt(Type::f32, s), d, k.mul(k.cvt(Type::f32, m), k.neg(dmin)));
        return k.mul(block_sum, x_scale);
    };
    read_slot_row = [this, q5](Reg row_at) {
        Reg const at = k.add(row_at, k.mul(slot_block, plan.block_bytes));
        RowWords w;
        w.words = k.ld_vector(Space::shared, Type::u32, 4, Address(at));
        for (Reg r : k.ld_vector(Space::shared, Type::u32, 4, Address(k.add(at, qs_in_block)))) w.words.push_back(r);
        if (q5)
            for (Reg r : k.ld_vector(Space::shared, Type::u32, 4, Address(k.add(at, qh_in_block))))
                w.words.push_back(r);
        return w;
    };
}

// q8_0 / q4_0: the thread's block 8·(its 256 values) + j: d, then the codes, 2-byte aligned (18- and
// 34-byte blocks), so read as words from the 4-byte boundary below and shifted by prmt; the last word
// read is the one holding the codes' last two bytes (for 4-byte aligned codes a word read again,
// which the prmt ignores), so nothing past the block's end is read.
void SpanningGemv::set_up_small() {
    bool const q8 = config.weight == DType::q8_0;
    unsigned const code_words = q8 ? 8 : 4;
    unsigned const small_bytes = q8 ? 34 : 18;
    // q4_0's codes are q + 8: Σ (q − 8)·x starts from −8·Σx.
    Reg const start = q8 ? k.mov(Type::s32, 0) : k.mul(sum_words(x_words), -8);
    Reg const block_at = k.add(lead, k.fma(slot_block, plan.block_bytes, k.mul(j, small_bytes)));
    Reg const codes_at = k.add(block_at, 2);
    Reg const shift = k.selp(0x5432, 0x3210, k.setp(Cmp::ne, k.and_(codes_at, 2), 0), Type::u32);
    Reg const aligned_at = k.and_(codes_at, ~3u);
    Reg const last_at = k.and_(k.add(codes_at, 4 * code_words - 2), ~3u);
    read_slot_row = [this, code_words, block_at, shift, aligned_at, last_at](Reg row_at) {
        Reg const base = k.add(row_at, aligned_at);
        std::vector<Reg> raw;
        for (unsigned i = 0; i < code_words; ++i)
            raw.push_back(k.ld(Space::shared, Type::u32, Address(base, 4 * static_cast<int>(i))));
        raw.push_back(k.ld(Space::shared, Type::u32, Address(k.add(row_at, last_at))));
        RowWords w;
        for (unsigned i = 0; i < code_words; ++i) w.words.push_back(k.prmt(raw[i], raw[i + 1], shift));
        Reg const d = k.reg(Type::u32);
        k.ld(d, Space::shared, Type::u16, Address(k.add(row_at, block_at)));
        w.words.push_back(d);
        return w;
    };
    // |Σ| ≤ 32·127·32767 (q8_0) or 32·15·32767 + 8·32·32767 (q4_0): well inside int32.
    partial = [this, q8, code_words, start](RowWords const& words) {
        std::span<Reg const> const codes = std::span(words.words).first(code_words);
        Reg sum;
        if (q8) {
            sum = dot(k, x_words, codes, start, true);
        } else {
            std::vector<Reg> lo, hi;  // values i and 16 + i of byte i
            for (Reg w : codes) {
                lo.push_back(k.and_(w, 0x0f0f0f0f));
                hi.push_back(k.and_(k.shr(w, 4), 0x0f0f0f0f));
            }
            sum = dot(k, std::span(x_words).subspan(8), hi, dot(k, std::span(x_words).first(8), lo, start));
        }
        Reg const d = k.cvt(Type::f32, k.split(words.words[code_words], Type::f16)[0]);
        return k.mul(k.mul(k.cvt(Type::f32, sum), d), x_scale);
    };
}

// q6_k: values 128h + 32p + 8u + i (p, i < 4 and 8), h = j/4, u = j%4: in quarter p, ql bytes
// 64h + 8u + i (p even) or 64h + 32 + 8u + i (odd), low nibbles for p < 2, high for p ≥ 2, and
// bits 2p, 2p+1 of qh byte 32h + 8u + i; scale sc[8h + u/2 + 2p].
void SpanningGemv::set_up_q6() {
    Reg const h = k.shr(j, 2), u = k.and_(j, 3);
    std::vector<std::vector<Reg>> xq;
    std::vector<Reg> x_offsets;  // −32·Σx of each quarter: where its dot products start
    for (unsigned p = 0; p < 4; ++p) {
        xq.emplace_back(x_words.begin() + 4 * p, x_words.begin() + 4 * p + 4);
        x_offsets.push_back(k.mul(sum_words(xq.back()), -32));
    }
    // Where the block lies in the slot row: 2-byte aligned, so words are read from the 4-byte
    // boundary below and shifted by prmt (selector 0x5432 when 2 bytes off, 0x3210 when not).
    Reg const block_at = k.add(lead, k.mul(slot_block, 210));
    Reg const shift = k.selp(0x5432, 0x3210, k.setp(Cmp::ne, k.and_(block_at, 2), 0), Type::u32);
    Reg const aligned_at = k.and_(block_at, ~3u);
    Reg const ql_at = k.add(k.shl(h, 6), k.shl(u, 3));
    Reg const qh_at = k.add(k.add(k.shl(h, 5), k.shl(u, 3)), 128);
    Reg const sc_at = k.add(k.shl(h, 3), 192);
    // Scale sc[8h + u/2 + 2p] is byte (block_at & 2) + u/2 + 2p of the three words read from the
    // 4-byte boundary below the block's 8 scales of this half: byte s = (block_at & 2) + u/2
    // (+ 2 for odd p) of the first two words for p < 2, of the last two for p ≥ 2, taken by a
    // prmt that sign-extends it (selector nibbles s, then s | 8 thrice).
    Reg const sc_byte = k.add(k.and_(block_at, 2), k.shr(u, 1));
    Reg const sc_select_even = k.fma(sc_byte, 0x1111, 0x8880);
    Reg const sc_select_odd = k.add(sc_select_even, 2 * 0x1111);
    read_slot_row = [this, shift, aligned_at, ql_at, qh_at, sc_at](Reg row_at) {
        Reg const base = k.add(row_at, aligned_at);
        auto const two_words = [&](Reg field, unsigned extra) {
            Reg const at = k.add(base, field);
            std::array<Reg, 3> raw{};
            for (unsigned i = 0; i < 3; ++i) raw[i] = k.ld(Space::shared, Type::u32, Address(at, extra + 4 * i));
            return std::array<Reg, 2>{k.prmt(raw[0], raw[1], shift), k.prmt(raw[1], raw[2], shift)};
        };
        RowWords w;
        for (auto const& [field, extra] : {std::pair{ql_at, 0u}, std::pair{ql_at, 32u}, std::pair{qh_at, 0u}})
            for (Reg r : two_words(field, extra)) w.words.push_back(r);
        Reg const scales = k.add(base, sc_at);
        for (unsigned i = 0; i < 3; ++i) w.words.push_back(k.ld(Space::shared, Type::u32, Address(scales, 4 * i)));
        w.words.push_back(k.prmt(k.ld(Space::shared, Type::u32, Address(base, 208)), 0, shift));  // d in the low half
        return w;
    };
    partial = [this, xq, x_offsets, sc_select_even, sc_select_odd](RowWords const& words) {
        auto const& v = words.words;  // ql a (2), ql b (2), qh (2), scale words as stored (3), d
        // Quarters 0-1 and 2-3 are each added up in int32 (|Σ (q − 32)·x| ≤ 8·32·32767 a quarter,
        // times |sc| ≤ 128, twice: ≤ 2147352576 < 2^31), then in f32.
        Reg total;
        for (unsigned half = 0; half < 2; ++half) {
            Reg sum;
            for (unsigned p = 2 * half; p < 2 * half + 2; ++p) {
                Reg dot = x_offsets[p];
                for (unsigned w = 0; w < 2; ++w) {
                    Reg const ql = p < 2 ? v[2 * (p % 2) + w] : k.shr(v[2 * (p % 2) + w], 4);
                    Reg const code =
                        k.or_(k.and_(ql, 0x0f0f0f0f), k.shl(k.and_(k.shr(v[4 + w], 2 * p), 0x03030303), 4));
                    dot = k.dp2a(xq[p][2 * w], code, dot, false, true, false);
                    dot = k.dp2a(xq[p][2 * w + 1], code, dot, true, true, false);
                }
                Reg const sc =
                    k.bitcast(Type::s32, k.prmt(v[6 + half], v[7 + half], p % 2 ? sc_select_odd : sc_select_even));
                sum = p % 2 == 0 ? k.mul(dot, sc) : k.fma(dot, sc, sum);
            }
            Reg const part = k.cvt(Type::f32, sum);
            total = half == 0 ? part : k.add(total, part);
        }
        Reg const d = k.cvt(Type::f32, k.split(v[9], Type::f16)[0]);
        return k.mul(k.mul(total, d), x_scale);
    };
}

// The steps. A warp's sums of a step's rows go to shared memory, slot
// ((s·groups + group)·batch + row)·group_warps + warp in group for the CTA's step s, and are added
// up after the last step: no barrier between steps, so the warps run (and load) independently.
void SpanningGemv::run_steps() {
    sums = k.add(shared, plan.sums_at);
    Reg const writer = k.setp(Cmp::lt, lane, plan.batch);
    local_step = k.mov(Type::u32, 0);
    Reg const step = k.reg(Type::u32);
    k.for_range(step, first, n, stride, [&] {
        std::vector<RowWords> const rows = plan.bulk       ? bulk_step_rows(step)
                                           : plan.streamed ? streamed_step_rows(step)
                                                           : direct_step_rows(step);
        std::vector<Reg> parts;
        for (RowWords const& w : rows) parts.push_back(partial(w));
        Reg const warp_sum = transposed_warp_sum(k, parts, lane);
        Reg const row_slot = k.fma(k.fma(local_step, config.groups, group), plan.batch, lane);
        Reg const slot = k.add(sums, k.shl(k.fma(row_slot, plan.group_warps, warp_in_group), 2));
        k.predicated(writer, true, [&] { k.st(Space::shared, Type::f32, Address(slot), warp_sum); });
        k.add(local_step, local_step, 1);
    });
}

std::vector<RowWords> SpanningGemv::bulk_step_rows(Reg step) {
    std::vector<RowWords> rows;
    Reg const slot = k.rem(local_step, plan.stages);
    // Thread 0 requests step + stages − 1 into the slot of the step before this one, once every
    // warp has released it (the first step's slot stages − 1 is fresh).
    k.if_then(producer, [&] {
        Reg const ahead = k.fma(stride, plan.stages - 1, step);
        k.if_then(k.setp(Cmp::lt, ahead, n), [&] {
            Reg const ahead_slot = k.rem(k.add(local_step, plan.stages - 1), plan.stages);
            k.if_then(k.setp(Cmp::ne, local_step, 0), [&] {
                Reg const previous_round = k.div(k.sub(local_step, 1), plan.stages);
                k.mbarrier_wait(k.add(empty_barriers, k.shl(ahead_slot, 3)), k.and_(previous_round, 1));
            });
            bulk_issue(ahead, ahead_slot);
        });
    });
    k.mbarrier_wait(k.add(full_barriers, k.shl(slot, 3)), k.and_(k.div(local_step, plan.stages), 1));
    Reg const slot_at = k.add(bulk_slots, k.mul(slot, plan.bulk_slot_bytes));
    for (unsigned r = 0; r < plan.batch; ++r)
        rows.push_back(read_slot_row(k.add(slot_at, k.mul(k.add(group_first, r), plan.row_bytes))));
    // Each thread releases the slot once its words are in registers: its arrive orders its own reads
    // before the copy that refills the slot. (With one arrive a warp after bar.warp.sync,
    // compute-sanitizer's racecheck reports every slot read racing the refill.)
    k.mbarrier_arrive(k.add(empty_barriers, k.shl(slot, 3)));
    return rows;
}

std::vector<RowWords> SpanningGemv::streamed_step_rows(Reg step) {
    std::vector<RowWords> rows;
    // All lanes are done with the slot the next request overwrites; the request for stages - 1
    // steps ahead; this step's copies, landed and visible to the whole warp.
    k.bar_warp_sync();
    Reg const ahead = k.add(step, k.mul(stride, plan.stages - 1));
    k.if_then(k.setp(Cmp::lt, ahead, n), [&] { issue(ahead, slot_issue); });
    k.cp_async_commit();
    k.cp_async_wait(static_cast<int>(plan.stages - 1));
    k.bar_warp_sync();
    Reg const slot_at = k.add(ring, k.mul(slot_read, plan.batch * plan.slot_bytes));
    for (unsigned r = 0; r < plan.batch; ++r) rows.push_back(read_slot_row(k.add(slot_at, r * plan.slot_bytes)));
    next_slot(slot_issue);
    next_slot(slot_read);
    return rows;
}

std::vector<RowWords> SpanningGemv::direct_step_rows(Reg step) {
    std::vector<RowWords> rows;
    for (unsigned r = 0; r < plan.batch; ++r) {
        RowWords w = fresh_words();
        if (plan.pipelined)
            for (unsigned i = 0; i < row_words; ++i) k.mov(w.words[i], pending[r].words[i]);
        else
            load_row(step, r, w);
        rows.push_back(w);
    }
    if (plan.pipelined) {
        // Unconditional (the last step's re-read the last row, clamped): a branch here lets ptxas
        // move the loads below the products.
        Reg const next = k.add(step, stride);
        for (unsigned r = 0; r < plan.batch; ++r) load_row(next, r, pending[r]);
    }
    return rows;
}

// rms_norm's scale 1/sqrt(mean(x²) + eps) from the warps' squares: every warp's where the CTA
// shares x (each took its own blocks), the first group's where each group holds all of x; in units
// of x·2^-96 where the plain squares overflowed.
Reg SpanningGemv::rms_norm_scale() {
    unsigned const holders = config.share_x ? plan.warps : plan.group_warps;
    Reg total = k.ld(Space::shared, Type::f32, Address(k.add(shared, plan.squares_at)));
    Reg scaled_total = k.ld(Space::shared, Type::f32, Address(k.add(shared, plan.squares_at), 4));
    for (unsigned w = 1; w < holders; ++w) {
        total = k.add(total, k.ld(Space::shared, Type::f32, Address(k.add(shared, plan.squares_at), 8 * w)));
        scaled_total =
            k.add(scaled_total, k.ld(Space::shared, Type::f32, Address(k.add(shared, plan.squares_at), 8 * w + 4)));
    }
    float const inverse_k = 1.0f / static_cast<float>(256 * plan.blocks);
    Reg const plain = k.rcp(k.sqrt(k.fma(total, inverse_k, *eps)));
    // eps·2^-192 is below f32's range, and negligible beside squares that overflowed.
    Reg const scaled = k.mul(k.rcp(k.sqrt(k.mul(scaled_total, inverse_k))), 0x1p-96f);
    return k.selp(plain, scaled, k.setp(Cmp::lt, total, std::numeric_limits<float>::infinity()), Type::f32);
}

// Row slot e of the CTA: step e / (groups·batch), row first + step·stride + e % (groups·batch).
void SpanningGemv::store_results(std::optional<Reg> row_scale) {
    unsigned const rows_per_step = config.groups * plan.batch;
    Reg const e = k.reg(Type::u32);
    k.for_range(e, tid, k.mul(local_step, rows_per_step), 32 * plan.warps, [&] {
        Reg const s_of_e = k.div(e, rows_per_step);
        Reg const row = k.add(k.fma(s_of_e, stride, first), k.sub(e, k.mul(s_of_e, rows_per_step)));
        k.if_then(k.setp(Cmp::lt, row, n), [&] {
            Reg const at = k.add(sums, k.shl(k.mul(e, plan.group_warps), 2));
            Reg total = k.ld(Space::shared, Type::f32, Address(at));
            for (unsigned w = 1; w < plan.group_warps; ++w)
                total = k.add(total, k.ld(Space::shared, Type::f32, Address(at, 4 * w)));
            if (row_scale) total = k.mul(total, *row_scale);
            if (bias) total = k.add(total, k.ld(Space::global, Type::f32, Address(k.add(*bias, k.mul_wide(row, 4)))));
            k.st(Space::global, Type::f32, Address(k.add(out, k.mul_wide(row, 4))), total);
        });
    });
}

}  // namespace

Kernel quant_gemv_spanning(QuantGemvSpanningConfig const& config) {
    Plan const plan = plan_of(config);  // checks the configuration before anything is emitted
    Kernel k(kernel_name(config, plan));
    SpanningGemv(k, config, plan).build();
    return k;
}

}  // namespace rayo::ptx::kernels
