// The PTX builder on its own: the text it emits, the verifier's errors, and ptxas accepting a
// kernel that uses every emitter family.
#include "support/ptxas.hpp"

#include <array>
#include <bit>
#include <cstring>

namespace rayo::test {
namespace {

using namespace rayo::ptx;

// The message of the BuildError `f` throws ("" when it throws nothing).
template <class F>
std::string build_error(F&& f) {
    try {
        f();
    } catch (BuildError const& e) {
        return e.what();
    }
    return {};
}

TEST(PtxBuilder, FloatImmediatesAreExactHexBits) {
    EXPECT_EQ(float_immediate(1.0, Type::f32), "0f3F800000");
    EXPECT_EQ(float_immediate(0.1f, Type::f32), "0f3DCCCCCD");
    EXPECT_EQ(float_immediate(-0.0, Type::f32), "0f80000000");
    EXPECT_EQ(float_immediate(0.1, Type::f64), "0d3FB999999999999A");
    EXPECT_EQ(float_immediate(std::numeric_limits<float>::infinity(), Type::f32), "0f7F800000");
    // Every f32 round-trips through its spelling, including subnormals.
    for (float v : {1.17549435e-38f, 1e-45f, 3.14159274f, -65504.0f, 1.0e38f}) {
        std::string const s = float_immediate(v, Type::f32);
        EXPECT_EQ(static_cast<std::uint32_t>(std::stoul(s.substr(2), nullptr, 16)), std::bit_cast<std::uint32_t>(v))
            << s;
    }
}

TEST(PtxBuilder, EmitsModuleHeaderParametersAndRegisterDeclarations) {
    Kernel k("axpy");
    Reg x = k.param(Type::u64, "x"), n = k.param(Type::u32, "n"), a = k.param(Type::f32, "a");
    Reg i = k.global_thread_index();
    k.if_then(k.setp(Cmp::lt, i, n), [&] {
        Reg p = k.element_address(k.cvta_to_global(x), i, 4);
        k.st(Space::global, Type::f32, p, k.fma(k.ld(Space::global, Type::f32, p), a, 0.5f));
    });
    std::string const text = k.emit(Target::sm_80);
    EXPECT_NE(text.find(".version 8.0\n.target sm_80\n.address_size 64"), std::string::npos) << text;
    EXPECT_NE(text.find(".visible .entry axpy(\n\t.param .u64 x,\n\t.param .u32 n,\n\t.param .f32 a\n)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(".reg .pred %p<1>;"), std::string::npos) << text;
    EXPECT_NE(text.find("fma.rn.f32 %f2, %f1, %f0, 0f3F000000;"), std::string::npos) << text;
    EXPECT_NE(text.find("@!%p0 bra $L_0;"), std::string::npos) << text;
    EXPECT_NE(text.find("\tret;\n}"), std::string::npos) << text;
}

TEST(PtxBuilder, VerifierRejectsARegisterReadBeforeItIsWritten) {
    Kernel k("undefined_read");
    Reg f = k.reg(Type::f32);
    Reg g = k.add(f, 1.0f);
    k.mov(k.reg(Type::f32), g);
    std::string const e = build_error([&] { (void)k.emit(Target::sm_90); });
    EXPECT_NE(e.find("ptx kernel 'undefined_read', instruction 0 `add.rn.f32 %f1, %f0, 0f3F800000;`"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("%f0 is read before any instruction writes it"), std::string::npos) << e;
}

TEST(PtxBuilder, VerifierRejectsMistypedRegistersAndImmediates) {
    {
        Kernel k("int_into_float_add");
        Reg u = k.mov(Type::u32, 3);
        Reg f = k.reg(Type::f32);
        k.add(f, u, 1.0f);
        std::string const e = build_error([&] { (void)k.emit(Target::sm_90); });
        EXPECT_NE(e.find("operand 2 %r0: .f32 needs a .f32 or .b32 register, got .u32"), std::string::npos) << e;
    }
    {
        Kernel k("integer_immediate_for_float");
        Reg f = k.mov(Type::f32, 1.0f);
        (void)k.add(f, 2);
        std::string const e = build_error([&] { (void)k.emit(Target::sm_90); });
        EXPECT_NE(e.find("integer immediate 2 given for a .f32 operand"), std::string::npos) << e;
    }
    {
        Kernel k("inexact_immediate");
        Reg f = k.mov(Type::f32, 1.0f);
        (void)k.mul(f, 0.1);  // a double that no float equals
        std::string const e = build_error([&] { (void)k.emit(Target::sm_90); });
        EXPECT_NE(e.find("not exactly representable as .f32"), std::string::npos) << e;
    }
    {
        Kernel k("global_address_is_32_bit");
        Reg a = k.mov(Type::u32, 0);
        (void)k.ld(Space::global, Type::f32, a);
        std::string const e = build_error([&] { (void)k.emit(Target::sm_90); });
        EXPECT_NE(e.find("global addresses are 64-bit"), std::string::npos) << e;
    }
    {
        Kernel k("immediate_out_of_range");
        Reg h = k.mov(Type::u16, 70000);
        (void)h;
        std::string const e = build_error([&] { (void)k.emit(Target::sm_90); });
        EXPECT_NE(e.find("immediate 70000 does not fit a .u16 operand"), std::string::npos) << e;
    }
}

TEST(PtxBuilder, VerifierRejectsForeignRegistersAndUnplacedLabels) {
    Kernel a("a"), b("b");
    Reg from_a = a.mov(Type::u32, 1);
    (void)b.add(from_a, 1);
    EXPECT_NE(build_error([&] { (void)b.emit(Target::sm_90); }).find("register of another kernel"), std::string::npos);

    Kernel c("unplaced");
    c.bra(c.label());
    EXPECT_NE(build_error([&] { (void)c.emit(Target::sm_90); }).find("never placed"), std::string::npos);

    Kernel d("twice");
    Label l = d.label();
    d.place(l);
    EXPECT_NE(build_error([&] { d.place(l); }).find("placed twice"), std::string::npos);
}

TEST(PtxBuilder, TargetRequirementsAndIsaVersionsAreChecked) {
    Kernel k("async_copy");
    Symbol s = k.shared_array("tile", Type::f32, 64);
    Reg dst = k.shared_address(s);
    Reg src = k.cvta_to_global(k.param(Type::u64, "src"));
    k.cp_async(dst, src, 16);
    k.cp_async_commit();
    k.cp_async_wait(0);
    EXPECT_NO_THROW((void)k.emit(Target::sm_80));
    EXPECT_NE(build_error([] {
                  Module m(Target::sm_90a, IsaVersion{7, 8});
              }).find("does not know sm_90a"),
              std::string::npos);
    EXPECT_NE(build_error([] {
                  (void)Kernel("bf16_convert").emit(Target::sm_80, IsaVersion{6, 5});
              }).find("needs 7.0"),
              std::string::npos);

    Kernel b("bf16_to_f32");
    Reg h = b.cvt(Type::bf16, b.mov(Type::f32, 1.0f));
    (void)b.cvt(Type::f32, h);
    EXPECT_NE(build_error([&] { (void)b.emit(Target::sm_80); }).find("needs sm_90 or newer; the module targets sm_80"),
              std::string::npos);
    EXPECT_NO_THROW((void)b.emit(Target::sm_90));

    // Programmatic dependent launch and bulk prefetches are sm_90's.
    for (auto const& add : std::vector<std::function<void(Kernel&)>>{
             [](Kernel& g) { g.griddepcontrol_wait(); }, [](Kernel& g) { g.griddepcontrol_launch_dependents(); },
             [](Kernel& g) { g.cp_async_bulk_prefetch_l2(g.cvta_to_global(g.param(Type::u64, "w")), 64u); },
             [](Kernel& g) { g.mbarrier_init(g.mov(Type::u32, 0u), 1u); }, [](Kernel& g) { g.fence_mbarrier_init(); },
             [](Kernel& g) { g.mbarrier_arrive(g.mov(Type::u32, 0u)); },
             [](Kernel& g) { g.mbarrier_arrive_expect_tx(g.mov(Type::u32, 0u), 16u); },
             [](Kernel& g) { g.mbarrier_wait(g.mov(Type::u32, 0u), 0u); },
             [](Kernel& g) {
                 g.cp_async_bulk_to_shared(g.mov(Type::u32, 16u), g.cvta_to_global(g.param(Type::u64, "w")), 32u,
                                           g.mov(Type::u32, 0u));
             }}) {
        Kernel g("early");
        add(g);
        EXPECT_NE(build_error([&] { (void)g.emit(Target::sm_80); }).find("needs sm_90 or newer"), std::string::npos);
        EXPECT_NO_THROW((void)g.emit(Target::sm_90));
    }
}

// A copy from global to shared memory takes a 32-bit shared and a 64-bit global address; a bulk
// copy's wait is a try_wait loop.
TEST(PtxBuilder, BulkCopiesAndBarrierWaitsAreEmittedAsPtxWritesThem) {
    Kernel k("bulk");
    Reg const w = k.cvta_to_global(k.param(Type::u64, "w"));
    Reg const slot = k.mov(Type::u32, 64u), barrier = k.mov(Type::u32, 0u);
    k.mbarrier_arrive_expect_tx(barrier, 32u);
    k.cp_async_bulk_to_shared(slot, w, 32u, barrier);
    k.mbarrier_wait(barrier, 1u);
    std::string const text = k.emit(Target::sm_90);
    EXPECT_NE(text.find("mbarrier.arrive.expect_tx.shared::cta.b64"), std::string::npos) << text;
    EXPECT_NE(text.find("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r"), std::string::npos)
        << text;
    EXPECT_NE(text.find("mbarrier.try_wait.parity.shared::cta.b64"), std::string::npos) << text;
    EXPECT_NE(text.find("bra $L_0;"), std::string::npos) << text;  // the retry
    // A 32-bit global address is still refused where it is the only address.
    Kernel bad("bad_prefetch");
    bad.cp_async_bulk_prefetch_l2(bad.mov(Type::u32, 0u), 16u);
    EXPECT_NE(build_error([&] { (void)bad.emit(Target::sm_90); }).find("global addresses are 64-bit"),
              std::string::npos);
}

// The CUDA backend launches every sm_90 kernel to start early: the wait goes before the first
// instruction, once, and a kernel that places its own wait keeps it where it is.
TEST(PtxBuilder, GriddepcontrolWaitAtEntryPrecedesEveryAccessOnce) {
    Kernel k("plain");
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    k.st(Space::global, Type::u32, out, k.mov(Type::u32, 7u));
    EXPECT_FALSE(k.waits_for_previous_grid());
    k.griddepcontrol_wait_at_entry();
    k.griddepcontrol_wait_at_entry();
    EXPECT_TRUE(k.waits_for_previous_grid());
    ASSERT_FALSE(k.instructions().empty());
    EXPECT_EQ(k.instructions().front().opcode, "griddepcontrol.wait");
    std::string const text = k.emit(Target::sm_90);
    std::size_t const wait = text.find("griddepcontrol.wait;");
    ASSERT_NE(wait, std::string::npos) << text;
    EXPECT_EQ(text.find("griddepcontrol.wait;", wait + 1), std::string::npos) << text;
    EXPECT_LT(wait, text.find("ld.param")) << text;
    EXPECT_LT(wait, text.find("st.global")) << text;
    EXPECT_NE(build_error([&] { (void)k.emit(Target::sm_80); }).find("needs sm_90 or newer"), std::string::npos);

    Kernel placed("placed");
    Reg const w = placed.cvta_to_global(placed.param(Type::u64, "w"));
    placed.cp_async_bulk_prefetch_l2(w, 64u);
    placed.griddepcontrol_wait();
    placed.griddepcontrol_wait_at_entry();
    ASSERT_EQ(placed.instructions().size(), 4u);  // ld.param, cvta, prefetch, wait
    EXPECT_EQ(placed.instructions().back().opcode, "griddepcontrol.wait");
}

TEST(PtxBuilder, LaunchBoundsAreEmittedAsDirectives) {
    Kernel k("bounded");
    k.max_threads(512);
    k.max_registers(128);
    std::string const text = k.emit(Target::sm_90);
    EXPECT_NE(text.find(".maxntid 512, 1, 1\n.maxnreg 128\n{"), std::string::npos) << text;
    EXPECT_EQ(Kernel("unbounded").emit(Target::sm_90).find(".maxnreg"), std::string::npos);
}

TEST(PtxBuilder, BitcastSplitAndJoinMoveBitsBetweenTypes) {
    Kernel k("reinterpret");
    Reg f = k.mov(Type::f32, 1.5f);
    Reg bits = k.bitcast(Type::u32, f);
    auto const halves = k.split(bits, Type::f16);
    Reg word = k.join(Type::b32, halves[0], halves[1]);
    Reg wide = k.join(Type::u64, bits, k.bitcast(Type::u32, k.bitcast(Type::f32, word)));
    auto const parts = k.split(wide, Type::b32);
    (void)parts;
    std::string const text = k.emit(Target::sm_80);
    EXPECT_NE(text.find("mov.b32 %r0, %f0;"), std::string::npos) << text;
    EXPECT_NE(text.find("mov.b32 {%hf0, %hf1}, %r0;"), std::string::npos) << text;
    EXPECT_NE(text.find("mov.b32 %b0, {%hf0, %hf1};"), std::string::npos) << text;
    EXPECT_NE(text.find("mov.b64 {%b1, %b2}, %rd0;"), std::string::npos) << text;
    EXPECT_THROW((void)k.bitcast(Type::f64, f), BuildError);
    EXPECT_THROW((void)k.split(f, Type::b32), BuildError);
    EXPECT_THROW((void)k.join(Type::u64, halves[0], halves[1]), BuildError);
    if (!ptxas_path().empty()) {
        EXPECT_EQ(ptxas_failure("reinterpret", text, Target::sm_80), "");
    }
}

TEST(PtxBuilder, BadNamesAndShapesAreRejectedAtTheCall) {
    EXPECT_THROW(Kernel("2fast"), BuildError);
    Kernel k("k");
    (void)k.param(Type::u32, "n");
    EXPECT_THROW((void)k.param(Type::u32, "n"), BuildError);
    EXPECT_THROW((void)k.reg(Type::u8), BuildError);
    EXPECT_THROW((void)k.shared_array("s", Type::f32, 4, 3), BuildError);
    Reg p = k.mov(Type::u32, 0);
    EXPECT_THROW((void)k.ldmatrix(3, false, p), BuildError);
    EXPECT_THROW(k.cp_async(p, p, 12), BuildError);
    std::vector<Reg> two(2, p);
    EXPECT_THROW(k.mma_m16n8k16(Type::f16, two, two, two, two), BuildError);
    EXPECT_THROW(Module(Target::sm_90).add(Kernel("same")).add(Kernel("same")), BuildError);
}

// One kernel touching every emitter family; ptxas must accept it for every target.
Kernel every_family() {
    Kernel k("every_family");
    k.max_threads(128);
    Reg in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg n = k.param(Type::u32, "n");
    Reg tid = k.special(Special::tid_x), lane = k.special(Special::laneid);
    Symbol tile = k.shared_array("tile", Type::b16, 16 * 16);
    Symbol dyn = k.dynamic_shared();
    Reg tile_base = k.shared_address(tile), dyn_base = k.shared_address(dyn);

    // Memory: scalar, vector, cache hints, shared, atomics.
    Reg i = k.global_thread_index();
    Reg addr = k.element_address(in, i, 16);
    std::vector<Reg> v = k.ld_vector(Space::global, Type::f32, 4, addr, Cache::nc);
    Reg sum = k.add(k.add(v[0], v[1]), k.add(v[2], v[3]));
    Reg byte = k.ld(Space::global, Type::u8, addr);
    k.st(Space::shared, Type::f32, Address(dyn_base, 0), sum);
    k.st_vector(Space::global, Type::f32, k.element_address(out, i, 16), v);
    (void)k.atom(Space::global, AtomicOp::add, Type::u32, out, byte);
    k.red(Space::global, AtomicOp::add, Type::f32, out, sum);
    (void)k.atom_cas(Space::global, Type::u32, out, 0, 1);

    // Arithmetic and conversions.
    Reg f = k.fma(sum, 2.0f, -1.0f);
    f = k.div(f, k.max(k.abs(f), 1.0f));
    f = k.add(k.sqrt(k.abs(f)), k.ex2_approx(k.lg2_approx(k.rcp(k.max(f, 0.5f)))));
    f = k.add(f, k.tanh_approx(k.rsqrt_approx(k.max(f, 1.0f))));
    f = k.add(f, k.div_approx(f, 3.0f));
    Reg h = k.cvt(Type::f16, f);
    Reg bh = k.cvt(Type::bf16, f);
    Reg back = k.cvt(Type::f32, h);
    Reg as_int = k.cvt(Type::s32, back);
    Reg bits = k.or_(k.and_(k.shl(k.mov(Type::b32, 0xff), 4), 0xf0), k.xor_(k.not_(k.mov(Type::b32, 0)), 1));
    Reg wide = k.mul_wide(i, 12);
    Reg hi = k.mul_hi(i, 7);
    Reg field = k.bfe(k.mov(Type::u32, 0xabcd), 4, 8);
    Reg perm = k.prmt(bits, bits, 0x3210);
    Reg dot = k.dp4a(perm, perm, as_int);
    Reg udot = k.dp2a(perm, perm, k.dp4a(perm, perm, 0u, false, false), true, false, false);
    dot = k.dp2a(perm, perm, dot, false);
    Reg q = k.rem(k.div(k.add(hi, field), 3), 5);
    Reg m = k.min(k.neg(dot), k.sub(as_int, 1));
    Reg flag = k.and_pred(k.setp(Cmp::ne, q, 0), k.not_pred(k.setp(Cmp::gt, m, 100)));
    Reg chosen = k.selp(q, udot, flag, Type::u32);
    k.st(Space::global, Type::u32, k.add(out, wide), chosen);
    k.st(Space::global, Type::b16, out, bh);
    k.st(Space::global, Type::f32, out, k.cvt(Type::f32, bh));

    // Warp-level operations.
    Reg shuffled = k.shfl(ShuffleMode::bfly, f, 16);
    Reg down = k.shfl(ShuffleMode::down, shuffled, 1);
    Reg up = k.shfl(ShuffleMode::up, down, 1);
    Reg from0 = k.shfl(ShuffleMode::idx, up, 0);
    Reg any = k.vote(VoteMode::any, k.setp(Cmp::gt, from0, 0.0f));
    Reg ballot = k.vote(VoteMode::ballot, any);
    k.bar_warp_sync();

    // Async copy, ldmatrix and mma.
    k.cp_async(tile_base, in, 16);
    k.cp_async(k.add(tile_base, 16), in, 16, Operand(0u));
    k.cp_async_commit();
    k.cp_async_wait(0);
    k.bar_sync();
    Reg row = k.add(tile_base, k.mul(k.and_(lane, 15), 32));
    std::vector<Reg> a = k.ldmatrix(4, false, row);
    std::vector<Reg> b = k.ldmatrix(2, true, row);
    std::vector<Reg> c, d;
    for (int j = 0; j < 4; ++j) c.push_back(k.mov(Type::f32, 0.0f));
    for (int j = 0; j < 4; ++j) d.push_back(k.reg(Type::f32));
    k.mma_m16n8k16(Type::f16, d, a, b, c);
    k.mma_m16n8k16(Type::bf16, d, a, b, d);
    k.st_vector(Space::global, Type::f32, out, d);

    // Programmatic dependent launch and an L2 bulk prefetch (sm_90).
    k.cp_async_bulk_prefetch_l2(in, 256u);
    k.cp_async_bulk_prefetch_l2(in, k.shl(lane, 4));
    k.griddepcontrol_launch_dependents();
    k.griddepcontrol_wait();

    // A bulk copy into shared memory, counted on an mbarrier, and the barrier's waits (sm_90).
    Reg const barrier = k.add(tile_base, 1024);
    k.if_then(k.setp(Cmp::eq, tid, 0), [&] {
        k.mbarrier_init(barrier, 1u);
        k.mbarrier_init(k.add(barrier, 8), n);
        k.fence_mbarrier_init();
    });
    k.bar_sync();
    k.mbarrier_arrive_expect_tx(barrier, 256u);
    k.cp_async_bulk_to_shared(tile_base, in, k.shl(lane, 4), barrier);
    k.mbarrier_wait(barrier, 0u);
    k.mbarrier_arrive(k.add(barrier, 8));
    k.mbarrier_wait(k.add(barrier, 8), k.and_(tid, 1));

    // Control flow: loops, branches, guards.
    Reg j = k.reg(Type::u32);
    Reg acc = k.mov(Type::u32, 0);
    k.for_range(j, 0, n, 1, [&] { k.add(acc, acc, j); });
    k.if_then_else(
        k.setp(Cmp::eq, tid, 0), [&] { k.st(Space::global, Type::u32, out, acc); },
        [&] { k.predicated(k.setp(Cmp::lt, tid, 32), true, [&] { k.st(Space::global, Type::u32, out, ballot); }); });
    k.membar_gl();
    k.comment("done");
    k.ret();
    return k;
}

TEST(PtxBuilder, PtxasAcceptsEveryEmitterFamily) {
    RAYO_SKIP_WITHOUT_PTXAS();
    Kernel const k = every_family();
    for (Target t : {Target::sm_90, Target::sm_90a}) expect_assembles(k, t);
    // bf16 → f32 conversion is an sm_90 instruction: the verifier refuses sm_80 before ptxas does.
    EXPECT_THROW((void)k.emit(Target::sm_80), BuildError);
}

// Hopper's atoms, one emitter per instruction: tensor maps as 128-byte parameters and the TMA's
// copies, warpgroup MMAs, register reallocation and clusters, spelled as the PTX ISA spells them,
// checked against the target, and assembled by ptxas for sm_90a.
Kernel every_hopper_atom() {
    Kernel k("hopper_atoms");
    k.max_threads(256);
    k.max_registers(168);
    k.cluster_dims(2, 1, 1);
    Reg const map = k.tensor_map_param("map");
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const tid = k.special(Special::tid_x);
    Reg const rank = k.special(Special::cluster_ctarank);
    Reg const smem = k.shared_address(k.dynamic_shared(1024));
    Reg const barrier = k.add(smem, 32768);
    k.prefetch_tensor_map(map);
    k.if_then(k.setp(Cmp::eq, tid, 0), [&] {
        k.mbarrier_init(barrier, 1u);
        k.fence_mbarrier_init();
    });
    k.barrier_cluster_arrive();
    k.barrier_cluster_wait();
    Reg const x = k.mov(Type::u32, 64), y = k.mov(Type::u32, 0), z = k.mov(Type::u32, 1);
    k.if_then(k.setp(Cmp::eq, tid, 0), [&] {
        k.mbarrier_arrive_expect_tx(barrier, 16384u);
        std::array const two{x, y};
        std::array const three{x, y, z};
        k.tma_load(smem, map, two, barrier);
        k.tma_load(k.add(smem, 8192), map, three, barrier, k.cvt(Type::u16, k.mov(Type::u32, 3)));
    });
    k.mbarrier_wait(barrier, 0u);
    k.if_then_else(
        k.setp(Cmp::lt, tid, 128), [&] { k.setmaxnreg(RegisterChange::decrease, 40); },
        [&] {
            k.setmaxnreg(RegisterChange::increase, 232);
            std::vector<Reg> d;
            for (int i = 0; i < 128; ++i) d.push_back(k.mov(Type::f32, 0.0f));
            Reg const desc = k.or_(k.cvt(Type::u64, k.shr(smem, 4)), std::int64_t{1} << 62);
            Reg const accumulate = k.setp(Cmp::ne, tid, 0);
            k.wgmma_fence();
            k.wgmma(Type::f16, 256, d, desc, desc, accumulate);
            k.wgmma(Type::bf16, 256, d, desc, desc, accumulate, false, true);
            k.wgmma(Type::f32, 256, d, desc, desc, accumulate);
            std::vector<Reg> a;
            for (unsigned i = 0; i < 4; ++i) a.push_back(k.mov(Type::b32, i));
            k.wgmma(Type::f16, 256, d, a, desc, accumulate, true);
            k.wgmma_commit();
            k.bar_sync(1, 256);
            k.bar_arrive(2, 128);
            k.wgmma_wait(0);
            k.st(Space::global, Type::f32, out, d[0]);
        });
    k.fence_proxy_async_shared();
    k.bar_sync();
    k.if_then(k.setp(Cmp::eq, tid, 0), [&] {
        std::array const two{x, y};
        k.tma_store(map, two, smem);
        k.cp_async_bulk_commit();
        k.cp_async_bulk_wait_read(0);
    });
    k.mbarrier_arrive_cluster(k.mapa_shared(barrier, k.xor_(rank, 1)));
    return k;
}

TEST(PtxBuilder, HopperAtomsAreEmittedAsPtxWritesThem) {
    Kernel const k = every_hopper_atom();
    std::string const text = k.emit(Target::sm_90a);
    for (std::string_view const expected :
         {".param .align 64 .b8 map[128],",
          ".reqnctapercluster 2, 1, 1",
          "cvta.param.u64 %rd",
          "prefetch.tensormap [%rd",
          "mov.u32 %r1, %cluster_ctarank;",
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r",
          "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r",
          "setmaxnreg.dec.sync.aligned.u32 40;",
          "setmaxnreg.inc.sync.aligned.u32 232;",
          "wgmma.fence.sync.aligned;",
          "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%f",
          ", 1, 1, 0, 0;",
          ", 1, 1, 0, 1;",
          "}, {%b",
          ", 1, 1, 1;",
          "bar.sync 1, 256;",
          "bar.arrive 2, 128;",
          "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%f",
          "wgmma.commit_group.sync.aligned;",
          "wgmma.wait_group.sync.aligned 0;",
          "fence.proxy.async.shared::cta;",
          "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd",
          "cp.async.bulk.commit_group;",
          "cp.async.bulk.wait_group.read 0;",
          "barrier.cluster.arrive.release.aligned;",
          "barrier.cluster.wait.acquire.aligned;",
          "mapa.shared::cluster.u32 %r",
          "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r"})
        EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
    EXPECT_NE(text.find(", {%r"), std::string::npos) << "coordinates as a vector after the map";
    ASSERT_EQ(k.parameters().size(), 2u);
    EXPECT_EQ(k.parameters()[0].bytes, 128u);
    EXPECT_EQ(k.parameters()[1].bytes, 8u);
    EXPECT_TRUE(k.architecture_specific());
    // wgmma and setmaxnreg exist on sm_90a only; the TMA and clusters on sm_90.
    EXPECT_NE(build_error([&] { (void)k.emit(Target::sm_90); }).find("exists only on sm_90a"), std::string::npos);
    EXPECT_NE(build_error([&] { (void)k.emit(Target::sm_80); }).find("sm_90"), std::string::npos);
    Kernel tma("tma_only");
    Reg const map = tma.tensor_map_param("m");
    Reg const at = tma.mov(Type::u32, 0);
    std::array const one{at};
    tma.tma_load(at, map, one, at);
    EXPECT_FALSE(tma.architecture_specific());
    EXPECT_NO_THROW((void)tma.emit(Target::sm_90));
    Kernel cluster("cluster_on_sm80");
    cluster.cluster_dims(2, 1, 1);
    EXPECT_NE(build_error([&] { (void)cluster.emit(Target::sm_80); }).find("clusters need sm_90"), std::string::npos);
    RAYO_SKIP_WITHOUT_PTXAS();
    expect_assembles(k, Target::sm_90a);
}

TEST(PtxBuilder, HopperAtomsRejectBadShapesAtTheCall) {
    Kernel k("bad_hopper");
    Reg const map = k.tensor_map_param("map");
    Reg const at = k.mov(Type::u32, 0);
    Reg const desc = k.mov(Type::u64, 0);
    Reg const p = k.setp(Cmp::eq, at, 0);
    std::vector<Reg> d(64, k.mov(Type::f32, 0.0f));
    EXPECT_NE(build_error([&] { k.tensor_map_param("map"); }).find("declared twice"), std::string::npos);
    EXPECT_NE(build_error([&] { k.tma_load(at, map, {}, at); }).find("1 to 5 coordinates"), std::string::npos);
    std::vector<Reg> const six(6, at);
    EXPECT_NE(build_error([&] { k.tma_store(map, six, at); }).find("1 to 5 coordinates"), std::string::npos);
    EXPECT_NE(build_error([&] { k.wgmma(Type::s32, 128, d, desc, desc, p); }).find(".f16, .bf16 or .f32"),
              std::string::npos);
    EXPECT_NE(build_error([&] { k.wgmma(Type::f32, 128, d, desc, desc, p, false, true); }).find("K-major"),
              std::string::npos);
    std::vector<Reg> const four(4, at);
    EXPECT_NE(build_error([&] { k.wgmma(Type::f32, 128, d, four, desc, p); }).find("from shared memory only"),
              std::string::npos);
    EXPECT_NE(build_error([&] { k.wgmma(Type::f16, 100, d, desc, desc, p); }).find("multiple of 8"), std::string::npos);
    EXPECT_NE(build_error([&] { k.wgmma(Type::f16, 256, d, desc, desc, p); }).find("needs 128 accumulator"),
              std::string::npos);
    EXPECT_NE(build_error([&] { k.bar_sync(16, 64); }).find("0 to 15"), std::string::npos);
    EXPECT_NE(build_error([&] { k.bar_arrive(1, 48); }).find("whole warps"), std::string::npos);
    std::vector<Reg> const three(3, at);
    EXPECT_NE(build_error([&] { k.wgmma(Type::f16, 128, d, three, desc, p); }).find("4 .b32 registers"),
              std::string::npos);
    EXPECT_NE(build_error([&] { k.wgmma(Type::f16, 256, d, three, desc, p); }).find("needs 128 accumulator"),
              std::string::npos);
    EXPECT_NE(build_error([&] { k.wgmma_wait(8); }).find("0 to 7"), std::string::npos);
    EXPECT_NE(build_error([&] { k.setmaxnreg(RegisterChange::increase, 260); }).find("24 to 256"), std::string::npos);
    EXPECT_NE(build_error([&] { k.setmaxnreg(RegisterChange::decrease, 41); }).find("steps of 8"), std::string::npos);
    EXPECT_NE(build_error([&] { k.cluster_dims(4, 4, 2); }).find("at most 16"), std::string::npos);
    EXPECT_NE(build_error([&] { k.cluster_dims(0, 1, 1); }).find("at least"), std::string::npos);
}

TEST(PtxBuilder, ModuleHoldsSeveralKernels) {
    RAYO_SKIP_WITHOUT_PTXAS();
    Module m(Target::sm_80);
    for (char const* name : {"first", "second"}) {
        Kernel k(name);
        Reg p = k.cvta_to_global(k.param(Type::u64, "p"));
        Symbol dyn = k.dynamic_shared(8);
        k.st(Space::shared, Type::f32, k.shared_address(dyn), 1.0f);
        k.st(Space::global, Type::f32, p, 1.0f);
        m.add(std::move(k));
    }
    std::string const text = m.emit();
    EXPECT_NE(text.find(".extern .shared .align 8 .b8 first_dynamic_shared[];"), std::string::npos) << text;
    EXPECT_EQ(ptxas_failure("module", text, Target::sm_80), "");
}

TEST(PtxBuilder, PtxasFailureReportsTheLine) {
    RAYO_SKIP_WITHOUT_PTXAS();
    std::string const bad =
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry bad()\n{\n\tfrobnicate.f32 %f0;\n}\n";
    std::string const report = ptxas_failure("deliberately_bad", bad, Target::sm_80);
    EXPECT_NE(report.find("PTX line 6: \tfrobnicate.f32 %f0;"), std::string::npos) << report;
}

}  // namespace
}  // namespace rayo::test
