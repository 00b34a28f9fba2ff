// A PTX kernel (.entry) built instruction by instruction from C++.
//
//   rayo::ptx::Kernel k("scale");
//   Reg x = k.param(Type::u64, "x"), n = k.param(Type::u32, "n");
//   Reg i = k.global_thread_index();
//   k.if_then(k.setp(Cmp::lt, i, n), [&] {
//       Reg p = k.element_address(k.cvta_to_global(x), i, 4);
//       k.st(Space::global, Type::f32, p, k.mul(k.ld(Space::global, Type::f32, p), 2.0f));
//   });
//   std::string text = k.emit(Target::sm_90);
//
// Registers are typed and virtual; every emitter checks nothing at the call but records the types
// it expects, and verify() (run by emit) rejects a register read before it is written, a register
// of the wrong type or of another kernel, a label used but never placed, and an instruction the
// target does not have — with the instruction's index and text in the message.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/error.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/instruction.hpp"
#include "rayo/ptx/operand.hpp"
#include "rayo/ptx/target.hpp"
#include "rayo/ptx/type.hpp"

namespace rayo::ptx {

// A kernel that cannot be emitted as written: the message names the kernel, the instruction and
// the operand.
class RAYO_API BuildError : public Error {
public:
    using Error::Error;
};

enum class Space : std::uint8_t { global, shared, local, param, constant, generic };
// Cache operators of ld/st (PTX "Cache operators"); nc selects the read-only data path (ld.global.nc).
enum class Cache : std::uint8_t { none, ca, cg, cs, lu, cv, nc, wb, wt };
enum class Cmp : std::uint8_t { eq, ne, lt, le, gt, ge };
// Float rounding for arithmetic and conversions; none lets the instruction's default stand
// (integer conversions, or float → wider float).
enum class Rounding : std::uint8_t { none, rn, rz, rm, rp, rni, rzi, rmi, rpi };
enum class Special : std::uint8_t {
    tid_x,
    tid_y,
    tid_z,
    ntid_x,
    ntid_y,
    ntid_z,
    ctaid_x,
    ctaid_y,
    ctaid_z,
    nctaid_x,
    nctaid_y,
    nctaid_z,
    laneid,
    warpid,
    cluster_ctarank,
    cluster_nctarank  // the block's rank in its thread-block cluster, and the cluster's size (sm_90)
};
// setmaxnreg: a warpgroup gives registers back to the multiprocessor's pool or takes more from it.
enum class RegisterChange : std::uint8_t { decrease, increase };
enum class ShuffleMode : std::uint8_t { up, down, bfly, idx };
enum class VoteMode : std::uint8_t { all, any, uni, ballot };
enum class AtomicOp : std::uint8_t { add, min, max, exch, and_, or_, xor_, inc, dec };
// Whole-warp mask for the .sync instructions.
inline constexpr std::uint32_t full_warp = 0xffffffffu;

class RAYO_API Kernel {
public:
    explicit Kernel(std::string name);
    Kernel(Kernel&&) noexcept = default;
    Kernel& operator=(Kernel&&) noexcept = default;
    Kernel(Kernel const&) = default;
    Kernel& operator=(Kernel const&) = default;

    [[nodiscard]] std::string const& name() const noexcept { return name_; }

    // ---- declarations
    // A kernel parameter, loaded into a register of its type (ld.param).
    Reg param(Type type, std::string_view name);
    // A fresh virtual register.
    Reg reg(Type type);
    // A special register (%tid.x, %ctaid.y, %laneid, ...) copied into a .u32 register.
    Reg special(Special s);
    // A static shared array of `count` elements; its address is shared_address(symbol).
    Symbol shared_array(std::string_view name, Type element, std::size_t count, std::size_t alignment = 16);
    // The dynamic shared memory (extern, sized at launch).
    Symbol dynamic_shared(std::size_t alignment = 16);
    // The 32-bit shared-window address of a shared symbol.
    Reg shared_address(Symbol const& symbol);
    // Upper bound on threads per block, emitted as .maxntid (lets ptxas budget registers).
    void max_threads(unsigned threads) { max_threads_ = threads; }
    // Upper bound on registers per thread, emitted as .maxnreg. Without it ptxas may hold a kernel
    // with .maxntid to fewer registers than it would use, scheduling loads late to stay within them.
    void max_registers(unsigned registers) { max_registers_ = registers; }

    // A kernel parameter as the kernel declares it: scalars have bytes_of(type) bytes; a tensor map
    // (tensor_map_param) is 128 bytes, 64-byte aligned, of type b8.
    struct Parameter {
        Type type;
        std::string name;
        std::size_t bytes;
    };
    [[nodiscard]] std::vector<Parameter> parameters() const;

    // ---- the escape hatch: any instruction, with its operands' types stated for the verifier
    void instruction(std::string opcode, std::vector<OperandUse> operands, Requirement requirement = {});
    void comment(std::string text);

    // ---- moves and conversions
    void mov(Reg dst, Operand src);
    Reg mov(Type type, Operand src);
    void cvt(Reg dst, Reg src, Rounding rounding = Rounding::none, bool saturate = false);
    Reg cvt(Type to, Reg src, Rounding rounding = Rounding::none, bool saturate = false);
    // The same bits in a register of another type of the same width (mov.bN): float <-> integer.
    Reg bitcast(Type to, Reg src);
    // A 32- or 64-bit register as its low and high halves, each of type `half` (mov.b32 {lo, hi}
    // or mov.b64 {lo, hi}), and two halves joined into one register of type `wide`.
    std::array<Reg, 2> split(Reg wide, Type half);
    Reg join(Type wide, Reg lo, Reg hi);
    // A generic address (a pointer parameter) converted to the global window.
    Reg cvta_to_global(Reg generic);
    // base + index * element_bytes as a .u64 address (index .u32 or .s32: widened first).
    Reg element_address(Reg base, Reg index, unsigned element_bytes);
    // blockIdx.x * blockDim.x + threadIdx.x, as .u32.
    Reg global_thread_index();

    // ---- arithmetic; the type is the destination's (floats: .rn unless stated, integers: .lo)
    void add(Reg dst, Reg a, Operand b);
    Reg add(Reg a, Operand b);
    void sub(Reg dst, Reg a, Operand b);
    Reg sub(Reg a, Operand b);
    void mul(Reg dst, Reg a, Operand b);
    Reg mul(Reg a, Operand b);
    // Integer: the full 2N-bit product (.wide); dst is twice as wide as a.
    Reg mul_wide(Reg a, Operand b);
    // Integer: the high half of the product.
    Reg mul_hi(Reg a, Operand b);
    void div(Reg dst, Reg a, Operand b);  // floats: div.rn (IEEE); integers: truncating
    Reg div(Reg a, Operand b);
    Reg div_approx(Reg a, Operand b);  // f32 only: div.approx.f32, 2 ulp
    Reg rem(Reg a, Operand b);
    // Float: fma.rn (one rounding); integer: mad.lo.
    void fma(Reg dst, Reg a, Operand b, Operand c);
    Reg fma(Reg a, Operand b, Operand c);
    Reg min(Reg a, Operand b);
    Reg max(Reg a, Operand b);
    void min(Reg dst, Reg a, Operand b);
    void max(Reg dst, Reg a, Operand b);
    Reg neg(Reg a);
    Reg abs(Reg a);
    Reg sqrt(Reg a);          // sqrt.rn
    Reg rsqrt_approx(Reg a);  // rsqrt.approx.f32
    Reg rcp(Reg a);           // rcp.rn
    Reg rcp_approx(Reg a);    // rcp.approx.f32
    Reg ex2_approx(Reg a);    // 2^a, ex2.approx.f32 (2 ulp)
    Reg lg2_approx(Reg a);    // log2(a), lg2.approx.f32
    Reg tanh_approx(Reg a);   // tanh.approx.f32 (sm_75+)
    // Bit operations (any integer or bit type).
    Reg and_(Reg a, Operand b);
    Reg or_(Reg a, Operand b);
    Reg xor_(Reg a, Operand b);
    Reg not_(Reg a);
    Reg shl(Reg a, Operand bits);
    Reg shr(Reg a, Operand bits);  // logical for .u/.b, arithmetic for .s
    // Extracts `length` bits at `start` (bfe), sign-extending for .s types.
    Reg bfe(Reg a, Operand start, Operand length);
    // prmt.b32: selects 4 bytes of {b, a} by the nibbles of selector.
    Reg prmt(Reg a, Operand b, Operand selector);
    // Four-way byte dot product with accumulate (dp4a), .s32 result.
    Reg dp4a(Reg a, Reg b, Operand c, bool a_signed = true, bool b_signed = true);
    // Two-way 16-bit x 8-bit dot product with accumulate (dp2a.lo / dp2a.hi: a's two halves times
    // b's bytes 0-1 / 2-3), .s32 result.
    Reg dp2a(Reg a, Reg b, Operand c, bool high, bool a_signed = true, bool b_signed = true);

    // ---- comparisons
    Reg setp(Cmp cmp, Reg a, Operand b);  // a .pred register; unsigned compare for .u/.b types
    Reg selp(Operand if_true, Operand if_false, Reg predicate, Type type);
    void selp(Reg dst, Operand if_true, Operand if_false, Reg predicate);
    Reg and_pred(Reg a, Reg b);
    Reg not_pred(Reg a);

    // ---- memory (addresses: .u64 for global/generic, .u32 for shared)
    void ld(Reg dst, Space space, Type type, Address const& address, Cache cache = Cache::none);
    Reg ld(Space space, Type type, Address const& address, Cache cache = Cache::none);
    // ld.v2 / ld.v4: `width` registers of `type`.
    std::vector<Reg> ld_vector(Space space, Type type, int width, Address const& address, Cache cache = Cache::none);
    void ld_vector(std::span<Reg const> dst, Space space, Type type, Address const& address, Cache cache = Cache::none);
    void st(Space space, Type type, Address const& address, Operand value, Cache cache = Cache::none);
    void st_vector(Space space, Type type, Address const& address, std::span<Reg const> values);
    // atom returns the old value; red does not.
    Reg atom(Space space, AtomicOp op, Type type, Address const& address, Operand value);
    void red(Space space, AtomicOp op, Type type, Address const& address, Operand value);
    Reg atom_cas(Space space, Type type, Address const& address, Operand compare, Operand value);

    // ---- asynchronous copies and tensor cores (sm_80+)
    // cp.async of 4, 8 or 16 bytes from global to shared; 16-byte copies bypass L1 (.cg).
    // `source_bytes` < bytes zero-fills the rest (out-of-range tiles).
    void cp_async(Reg shared_address, Address const& global, int bytes, std::optional<Operand> source_bytes = {});
    void cp_async_commit();
    void cp_async_wait(int pending_groups);
    // ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: `count` .b32 registers.
    std::vector<Reg> ldmatrix(int count, bool transpose, Reg shared_address);
    // cp.async.bulk.prefetch.L2.global (sm_90): `bytes` (a multiple of 16, from a 16-byte aligned
    // address) brought into L2 with one instruction; nothing is written, so it may run before
    // griddepcontrol_wait: L2 is where every write lands, so what it holds is never stale.
    void cp_async_bulk_prefetch_l2(Address const& global, Operand bytes);
    // Shared-memory barriers (mbarrier, sm_90 here): 8 bytes at an 8-byte aligned shared address.
    // A phase completes once `arrivals` threads have arrived and every byte announced to it by
    // mbarrier_arrive_expect_tx has landed; mbarrier_wait returns once the phase of the given
    // parity (0 for the first, then alternating) has completed. fence_mbarrier_init makes
    // initialised barriers visible to the bulk-copy unit (then bar_sync before any thread uses them).
    void mbarrier_init(Reg shared_address, Operand arrivals);
    void fence_mbarrier_init();
    void mbarrier_arrive(Reg shared_address);
    void mbarrier_arrive_expect_tx(Reg shared_address, Operand bytes);
    void mbarrier_wait(Reg shared_address, Operand parity);
    // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (sm_90): `bytes` (a multiple
    // of 16, both addresses 16-byte aligned) copied from global to shared memory by the bulk-copy
    // unit, their landing counted against the barrier at `mbarrier`.
    void cp_async_bulk_to_shared(Reg shared_address, Address const& global, Operand bytes, Reg mbarrier);
    // mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: d (4 f32) = a (4 b32) · b (2 b32) + c (4 f32).
    void mma_m16n8k16(Type input, std::span<Reg const> d, std::span<Reg const> a, std::span<Reg const> b,
                      std::span<Reg const> c);

    // ---- Hopper (sm_90; wgmma and setmaxnreg sm_90a): the tensor memory accelerator (TMA), warpgroup
    // MMAs, register reallocation and thread-block clusters. One emitter per instruction.
    //
    // A kernel parameter holding a tensor map (CUtensorMap: 128 bytes, 64-byte aligned, encoded on the
    // host by cuTensorMapEncodeTiled from a rayo::ptx::TensorMapSpec) passed by value, as CUDA C++'s
    // __grid_constant__ parameters are: declared `.param .align 64 .b8 name[128]`; returns its
    // generic address (.u64), which tma_load / tma_store / prefetch_tensor_map take.
    Reg tensor_map_param(std::string_view name);
    // prefetch.tensormap: brings the map into the constant cache before the first copy uses it.
    void prefetch_tensor_map(Reg map);
    // cp.async.bulk.tensor.<rank>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes: the box of
    // the map at `coordinates` (.s32, innermost dimension first; elements outside the tensor read as
    // zero) copied into shared memory at `shared_address` (aligned to 128 bytes, or to 1024 for a
    // 128-byte swizzle), the box's bytes counted against `mbarrier`. With `multicast_mask` (.u16,
    // .multicast::cluster, sm_90a), the box lands at the same offset in every block of the cluster
    // whose bit is set, each block's own barrier at `mbarrier`'s offset counting it.
    void tma_load(Reg shared_address, Reg map, std::span<Reg const> coordinates, Reg mbarrier,
                  std::optional<Reg> multicast_mask = std::nullopt);
    // cp.async.bulk.tensor.<rank>d.global.shared::cta.tile.bulk_group: the box at `shared_address`
    // written to the map's tensor at `coordinates` (elements outside it are not written); completes
    // in bulk groups (cp_async_bulk_commit, cp_async_bulk_wait_read).
    void tma_store(Reg map, std::span<Reg const> coordinates, Reg shared_address);
    void cp_async_bulk_commit();
    // cp.async.bulk.wait_group.read: waits until at most `pending_groups` bulk groups still read
    // shared memory (their source may then be overwritten).
    void cp_async_bulk_wait_read(int pending_groups);
    // fence.proxy.async.shared::cta: orders this thread's ordinary shared-memory accesses before
    // later ones of the async proxy (TMA stores, wgmma reads of what it wrote with st.shared).
    void fence_proxy_async_shared();
    // wgmma.fence.sync.aligned: before the first wgmma that reads accumulator registers written by
    // other instructions, and between such writes and a wgmma.
    void wgmma_fence();
    void wgmma_commit();                  // wgmma.commit_group.sync.aligned
    void wgmma_wait(int pending_groups);  // wgmma.wait_group.sync.aligned N
    // wgmma.mma_async.sync.aligned.m64n<n>k16.f32.<input>.<input> (sm_90a), issued by the 128 threads
    // of a warpgroup together: d (n / 2 .f32 per thread) = a (64 × 16) · b (16 × n) + (accumulate ?
    // d : 0), a and b in shared memory described by 64-bit matrix descriptors (start address,
    // leading and stride byte offsets, swizzle mode; PTX ISA "Matrix Descriptor Format").
    // transpose_a / transpose_b: the operand is stored M- / N-major instead of K-major. Thread t of
    // the warpgroup holds, for j < n / 8, d[4j + 2h + e] = D[16·(t / 32) + (t % 32) / 4 + 8h][8j + 2·(t % 4) + e].
    // input Type::f32 emits the TF32 form, m64n<n>k8.f32.tf32.tf32: a (64 × 8) and b (8 × n) are f32
    // values in shared memory of which the tensor cores use the top 19 bits (sign, exponent and 10
    // mantissa bits); both must be K-major (no transposes).
    void wgmma(Type input, unsigned n, std::span<Reg const> d, Reg a_descriptor, Reg b_descriptor, Reg accumulate,
               bool transpose_a = false, bool transpose_b = false);
    // The same with a from registers: `a` is the thread's four .b32 registers (two 16-bit values
    // each, the lower first) of the 64 × 16 tile, laid out as mma.m16n8k16's A fragment over its
    // warp's 16 rows: a[r] = A[16·(t / 32) + (t % 32) / 4 + 8·(r % 2)][8·(r / 2) + 2·(t % 4) + {0, 1}].
    // That is d's layout, so an accumulator tile rounded to 16 bits feeds the next MMA directly.
    // 16-bit inputs only.
    void wgmma(Type input, unsigned n, std::span<Reg const> d, std::span<Reg const> a, Reg b_descriptor, Reg accumulate,
               bool transpose_b = false);
    // setmaxnreg.{dec,inc}.sync.aligned.u32 (sm_90a): the warpgroup's registers per thread become
    // `registers` (24 to 256, a multiple of 8). The kernel needs max_registers() for it to take effect.
    void setmaxnreg(RegisterChange change, unsigned registers);
    // .reqnctapercluster x, y, z: the kernel runs in thread-block clusters of that shape (launched
    // with the cluster dimension attribute).
    void cluster_dims(unsigned x, unsigned y, unsigned z);
    // barrier.cluster.arrive.release / barrier.cluster.wait.acquire, with .aligned where every
    // thread of the warp executes the same instruction (not after divergent code).
    void barrier_cluster_arrive(bool aligned = true);
    void barrier_cluster_wait(bool aligned = true);
    // mapa.shared::cluster.u32: the address, in the cluster's shared window, of the variable at
    // `shared_address` in the block of rank `cta_rank`.
    Reg mapa_shared(Reg shared_address, Operand cta_rank);
    // mbarrier.arrive.release.cluster.shared::cluster.b64: an arrival on the barrier at a cluster
    // address (mapa_shared), maybe another block's.
    void mbarrier_arrive_cluster(Reg cluster_address);

    // ---- warp-level
    Reg shfl(ShuffleMode mode, Reg value, Operand lane_or_delta, std::uint32_t mask = full_warp);
    Reg vote(VoteMode mode, Reg predicate, std::uint32_t mask = full_warp);  // ballot: .b32, else .pred

    // ---- synchronisation
    void bar_sync(int barrier = 0);
    // Named barriers shared by some of the block's warps: bar.sync waits until `threads` (a multiple
    // of 32) have arrived at barrier `barrier` (0 to 15); bar.arrive counts the warp's arrival and
    // goes on (a producer signalling a consumer, or warpgroups taking turns).
    void bar_sync(int barrier, unsigned threads);
    void bar_arrive(int barrier, unsigned threads);
    void bar_warp_sync(std::uint32_t mask = full_warp);
    void membar_gl();
    // Programmatic dependent launch (sm_90). A kernel launched to start early (cuLaunchKernelEx
    // with programmatic stream serialization) may run while the previous kernel in the stream
    // finishes: griddepcontrol_wait blocks until that kernel has completed and its writes are
    // visible, and must come before any access to memory that kernel may touch.
    // griddepcontrol_launch_dependents lets the next such kernel start once every CTA of this one
    // has issued it (or exited). Without the launch attribute both do nothing.
    void griddepcontrol_wait();
    void griddepcontrol_launch_dependents();
    // Puts griddepcontrol_wait before the kernel's first instruction, unless it waits already: what
    // lets any kernel be launched to start early.
    void griddepcontrol_wait_at_entry();
    [[nodiscard]] bool waits_for_previous_grid() const noexcept;
    // Whether an instruction exists only on an architecture-specific target (sm_90a): such a
    // kernel is emitted for sm_90a where the device is an sm_90.
    [[nodiscard]] bool architecture_specific() const noexcept;

    // ---- control flow
    Label label();
    void place(Label l);
    void bra(Label l);
    void bra_if(Reg predicate, Label l, bool when = true);
    void ret();
    // Every instruction emitted by `body` is guarded by @predicate (or @!predicate).
    void predicated(Reg predicate, bool when, std::function<void()> const& body);
    // Branches around `body` unless predicate holds.
    void if_then(Reg predicate, std::function<void()> const& body);
    void if_then_else(Reg predicate, std::function<void()> const& then_body, std::function<void()> const& else_body);
    // for (index = begin; index < end; index += step) body(); compares by index's type.
    void for_range(Reg index, Operand begin, Operand end, Operand step, std::function<void()> const& body);

    // ---- output
    // Throws BuildError at the first problem; emit() runs it.
    void verify(Target target) const;
    // The .entry with its declarations (for a Module holding several kernels).
    [[nodiscard]] std::string emit_entry(Target target) const;
    // A whole module with this kernel alone.
    [[nodiscard]] std::string emit(Target target, std::optional<IsaVersion> isa = std::nullopt) const;
    // The module-scope declarations this kernel needs (its dynamic shared memory).
    [[nodiscard]] std::string emit_module_scope() const;

    [[nodiscard]] std::span<Instruction const> instructions() const noexcept { return body_; }
    [[nodiscard]] std::string register_name(Reg r) const;

private:
    struct ParamDecl {
        Type type;
        std::string name;
        std::size_t bytes = 0;  // an array parameter (a tensor map): its bytes, 64-byte aligned
    };
    struct SharedDecl {
        std::string name;
        Type element;
        std::size_t count;
        std::size_t alignment;
    };

    void push(Instruction in);
    void check_wgmma(Type input, unsigned n, std::size_t accumulators) const;
    void check_named_barrier(int barrier, unsigned threads) const;
    void check_own(Reg r, std::string_view what) const;
    void arith(std::string_view op, Reg dst, std::vector<Operand> const& sources, bool float_rounding, bool integer_lo);
    void unary_float(std::string_view opcode, Reg dst, Reg a, Requirement req = {});
    Reg same_type_result(Reg a) { return reg(a.type()); }
    [[nodiscard]] std::string describe(Instruction const& in) const;
    [[nodiscard]] std::string operand_text(OperandUse const& use) const;
    [[nodiscard]] std::string address_text(Address const& a) const;

    std::uint32_t serial_;  // tells this kernel's registers and labels from another's
    std::string name_;
    std::vector<ParamDecl> params_;
    std::vector<SharedDecl> shared_;
    std::optional<std::size_t> dynamic_shared_alignment_;
    std::vector<Type> reg_types_;
    std::vector<std::uint32_t> reg_ordinals_;  // index among the registers of the same type
    std::array<std::uint32_t, 32> next_ordinal_{};
    std::uint32_t label_count_ = 0;
    std::vector<Instruction> body_;
    std::optional<Guard> guard_;
    unsigned max_threads_ = 0;
    unsigned max_registers_ = 0;
    std::array<unsigned, 3> cluster_{0, 0, 0};
};

// The target to emit `kernel` for on a device of target `device`: sm_90a where the kernel uses an
// architecture-specific instruction and the device is an sm_90, else the device's own.
[[nodiscard]] inline Target emission_target(Kernel const& kernel, Target device) noexcept {
    return device == Target::sm_90 && kernel.architecture_specific() ? Target::sm_90a : device;
}

}  // namespace rayo::ptx
