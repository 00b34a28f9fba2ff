// A host interpreter for the PTX that rayo's kernel generators emit, so the tests can check what
// a kernel computes on a machine without a GPU. It executes a ptx::Kernel's recorded instructions
// (not its text) thread by thread on host memory: global addresses are host pointers (each access
// bounds- and alignment-checked against the buffers the test allows), shared memory is per block,
// bar.sync waits for the block's threads (bar.sync / bar.arrive id, n for n threads at named barrier
// id) and shfl.sync, ldmatrix and mma.sync for the warp's lanes. Float arithmetic is
// the host's IEEE single/double arithmetic with round-to-nearest (fma is std::fma), which is what
// the .rn instructions compute; rcp.approx is modelled as the correctly rounded reciprocal, and
// ex2.approx.f32 as the correctly rounded 2^x with subnormal results flushed to zero (as .ftz
// does); tests allow for the hardware's 2 ulp in their bounds. cp.async copies land only when the
// issuing thread's cp.async.wait_group lets their group complete (so a read before the wait, or
// before the barrier after another thread's wait, sees the old bytes), and bar.warp.sync is
// modelled as a barrier of the whole block (stronger than the hardware's, never weaker).
//
// Hopper (sm_90 / sm_90a), as strict as the PTX ISA allows:
// * Tensor maps: a 128-byte kernel parameter (Kernel::tensor_map_param) receives the bytes of a
//   ptx::TensorMap, which here hold the TensorMapSpec itself (encode_tensor_map); `mov.u64 r, name`
//   gives the host address of the launch's copy, cvta.param is the identity.
// * TMA loads (cp.async.bulk.tensor ... .mbarrier::complete_tx::bytes), like the non-tensor bulk
//   copies, poison their shared destination when issued and land (reading global memory then) at
//   the first mbarrier.try_wait that finds every arrival of the phase in; the box's bytes, those
//   filled with zeros outside the tensor included, count against the barrier's transaction count.
// * TMA stores (.bulk_group) read shared memory and write global memory when the issuing thread's
//   cp.async.bulk.wait_group[.read] retires their bulk group (or when the thread exits), so a
//   kernel that reuses the source before that wait stores the new bytes.
// * wgmma.mma_async, wgmma.commit_group and wgmma.wait_group run once all 128 threads of the
//   warpgroup (linear thread index / 128) are at the same one. An MMA is recorded at issue (its
//   descriptors, scale-d and, with a from registers, a's values then) and computed when a wgmma.wait_group retires its
//   group: it reads shared memory then, and its accumulator registers hold a NaN (0x7fc00bad) from issue until every
//   MMA in flight on them is retired. Each result element is (scale-d ? d : 0) plus the 16 (8 for tf32) exact products
//   summed in double, rounded to f32 once; a tf32 operand is its f32 value with the low 13 mantissa bits cleared.
// * Thread-block clusters (more than one block), multicast, barrier.cluster, mapa and remote
//   mbarrier arrivals are not simulated (SimulationError "... not simulated").
// Only the subset of PTX the generators use is known; anything else fails with the instruction.
#pragma once

#include <rayo/ptx/ptx.hpp>
#include <rayo/ptx/tensor_map.hpp>

#include "cuda/kernel_runner.hpp"
#include "dispatch/device_fault.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <string_view>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rayo::test::ptxsim {

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

inline std::uint64_t param(float v) { return std::bit_cast<std::uint32_t>(v); }
inline std::uint64_t param(void const* p) { return reinterpret_cast<std::uintptr_t>(p); }
inline std::uint64_t param(std::uint64_t v) { return v; }

class SimulationError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// ---- tensor maps: the simulated device's "encoding" of a TensorMapSpec is the spec's own bytes.
static_assert(std::is_trivially_copyable_v<ptx::TensorMapSpec>);
static_assert(sizeof(ptx::TensorMapSpec) <= sizeof(ptx::TensorMap::bytes), "a TensorMapSpec must fit in a CUtensorMap");

// What cuTensorMapEncodeTiled (no interleave, element strides of 1) refuses in a spec: "" when
// nothing. CUDA driver API, cuTensorMapEncodeTiled: rank 1 to 5; a 16-byte aligned address;
// dimensions 1 to 2^32; strides multiples of 16 below 2^40; box dimensions 1 to 256, the inner one
// a multiple of 16 bytes and, with a swizzle, at most the swizzle's span (32, 64 or 128 bytes).
inline std::string tensor_map_problem(ptx::TensorMapSpec const& s) {
    int const element = ptx::bytes_of(s.element);
    if (element != 1 && element != 2 && element != 4 && element != 8)
        return "element type ." + std::string(ptx::name_of(s.element)) + " is not of 1, 2, 4 or 8 bytes";
    if (s.rank < 1 || s.rank > 5) return "rank " + std::to_string(s.rank) + " (1 to 5)";
    if (s.address % 16 != 0) return "address " + std::to_string(s.address) + " not 16-byte aligned";
    if (static_cast<unsigned>(s.swizzle) > static_cast<unsigned>(ptx::TensorMapSwizzle::swizzle_128b))
        return "unknown swizzle " + std::to_string(static_cast<unsigned>(s.swizzle));
    for (unsigned i = 0; i < s.rank; ++i) {
        if (s.dims[i] == 0 || s.dims[i] > (std::uint64_t{1} << 32))
            return "dimension " + std::to_string(i) + " of " + std::to_string(s.dims[i]) + " elements (1 to 2^32)";
        if (s.box[i] == 0 || s.box[i] > 256)
            return "box dimension " + std::to_string(i) + " of " + std::to_string(s.box[i]) + " elements (1 to 256)";
        if (i > 0 && (s.strides[i] % 16 != 0 || s.strides[i] >= (std::uint64_t{1} << 40)))
            return "stride " + std::to_string(i) + " of " + std::to_string(s.strides[i]) +
                   " bytes (a multiple of 16 below 2^40)";
    }
    std::uint64_t const inner = std::uint64_t{s.box[0]} * static_cast<std::uint64_t>(element);
    if (inner % 16 != 0) return "the box's inner dimension is " + std::to_string(inner) + " bytes (a multiple of 16)";
    std::uint64_t const span = s.swizzle == ptx::TensorMapSwizzle::swizzle_32b    ? 32
                               : s.swizzle == ptx::TensorMapSwizzle::swizzle_64b  ? 64
                               : s.swizzle == ptx::TensorMapSwizzle::swizzle_128b ? 128
                                                                                  : 0;
    if (span != 0 && inner > span)
        return "the box's inner dimension is " + std::to_string(inner) + " bytes, more than the swizzle's " +
               std::to_string(span);
    return {};
}

// The simulated cuTensorMapEncodeTiled: the spec's bytes, or SimulationError where the driver
// would refuse the spec.
inline ptx::TensorMap encode_tensor_map(ptx::TensorMapSpec const& spec) {
    if (std::string const problem = tensor_map_problem(spec); !problem.empty())
        throw SimulationError("cuTensorMapEncodeTiled (simulated): " + problem);
    ptx::TensorMap map;
    std::memcpy(map.bytes.data(), &spec, sizeof spec);
    return map;
}

inline ptx::TensorMapSpec decode_tensor_map(ptx::TensorMap const& map) {
    ptx::TensorMapSpec spec;
    std::memcpy(&spec, map.bytes.data(), sizeof spec);
    return spec;
}

class Simulator {
public:
    explicit Simulator(ptx::Kernel const& kernel) : kernel_(kernel) {
        for (auto const& p : kernel.parameters()) {
            if (p.bytes != static_cast<std::size_t>(ptx::bytes_of(p.type)) && p.bytes != sizeof(ptx::TensorMap))
                throw SimulationError(kernel.name() + ": parameter " + p.name + " of " + std::to_string(p.bytes) +
                                      " bytes not simulated");
            parameters_.push_back(p);
            param_types_.push_back(p.type);
        }
        decode();
        // Shared arrays: sizes from the emitted declarations (the builder keeps them private).
        std::string const text = kernel.emit(ptx::emission_target(kernel, ptx::Target::sm_90));
        std::regex const shared(R"(\.shared \.align (\d+) \.b8 (\w+)\[(\d+)\];)");
        for (std::sregex_iterator it(text.begin(), text.end(), shared), end; it != end; ++it) {
            std::size_t const align = std::stoul((*it)[1].str()), bytes = std::stoul((*it)[3].str());
            shared_bytes_ = (shared_bytes_ + align - 1) / align * align;
            symbols_[(*it)[2].str()] = shared_bytes_;
            shared_bytes_ += bytes;
        }
        // The dynamic shared array (sized at launch) follows the static ones.
        std::regex const dynamic(R"(\.extern \.shared \.align (\d+) \.b8 (\w+)\[\];)");
        std::smatch m;
        if (std::regex_search(text, m, dynamic)) {
            std::size_t const align = std::stoul(m[1].str());
            shared_bytes_ = (shared_bytes_ + align - 1) / align * align;
            symbols_[m[2].str()] = shared_bytes_;
        }
        std::regex const cluster(R"(\.reqnctapercluster (\d+), (\d+), (\d+))");
        if (std::regex_search(text, m, cluster))
            cluster_ = {std::stoul(m[1].str()), std::stoul(m[2].str()), std::stoul(m[3].str())};
    }

    // Host memory the kernel may read and write.
    void allow(void const* p, std::size_t bytes) { ranges_.push_back({reinterpret_cast<std::uintptr_t>(p), bytes}); }

    void forget_buffers() { ranges_.clear(); }

    // Runs the kernel over the grid; `params` are the raw bits of the kernel's parameters in
    // declaration order (param() makes them); a tensor map parameter's value is the address of
    // the 128 bytes to pass (a ptx::TensorMap), which the launch copies.
    void run(Dim3 grid, Dim3 block, std::vector<std::uint64_t> const& params, std::size_t dynamic_shared_bytes = 0) {
        if (params.size() != parameters_.size())
            throw SimulationError(kernel_.name() + ": " + std::to_string(parameters_.size()) + " parameters, " +
                                  std::to_string(params.size()) + " given");
        if (cluster_[0] * cluster_[1] * cluster_[2] > 1)
            throw SimulationError(kernel_.name() + ": thread-block clusters of " + std::to_string(cluster_[0]) + "x" +
                                  std::to_string(cluster_[1]) + "x" + std::to_string(cluster_[2]) +
                                  " blocks (.reqnctapercluster) not simulated");
        params_.clear();
        tensor_maps_.clear();
        for (std::size_t i = 0; i < params.size(); ++i) {
            ptx::Kernel::Parameter const& p = parameters_[i];
            if (p.bytes == sizeof(ptx::TensorMap)) {
                if (params[i] == 0) throw SimulationError(kernel_.name() + ": no tensor map given for " + p.name);
                auto map = std::make_unique<ptx::TensorMap>();
                std::memcpy(map->bytes.data(), reinterpret_cast<void const*>(params[i]), map->bytes.size());
                params_[p.name] = reinterpret_cast<std::uintptr_t>(map.get());
                tensor_maps_[p.name] = std::move(map);
            } else {
                params_[p.name] = params[i];
            }
        }
        grid_ = grid;
        block_ = block;
        dynamic_shared_bytes_ = dynamic_shared_bytes;
        for (unsigned bz = 0; bz < grid.z; ++bz)
            for (unsigned by = 0; by < grid.y; ++by)
                for (unsigned bx = 0; bx < grid.x; ++bx) run_block(bx, by, bz);
    }

    // run() with the parameters as a driver launch takes them: pointers to values of exactly the
    // types the kernel declares (a ptx::TensorMap for a tensor map parameter).
    void run(Dim3 grid, Dim3 block, std::span<void* const> arguments, std::size_t dynamic_shared_bytes = 0) {
        if (arguments.size() != parameters_.size())
            throw SimulationError(kernel_.name() + ": " + std::to_string(parameters_.size()) + " parameters, " +
                                  std::to_string(arguments.size()) + " given");
        std::vector<std::uint64_t> values;
        for (std::size_t i = 0; i < arguments.size(); ++i) {
            std::uint64_t v = 0;
            if (parameters_[i].bytes == sizeof(ptx::TensorMap))
                v = reinterpret_cast<std::uintptr_t>(arguments[i]);
            else
                std::memcpy(&v, arguments[i], parameters_[i].bytes);
            values.push_back(v);
        }
        run(grid, block, values, dynamic_shared_bytes);
    }

    [[nodiscard]] std::uint64_t executed() const noexcept { return executed_; }
    [[nodiscard]] std::vector<ptx::Type> const& parameter_types() const noexcept { return param_types_; }

private:
    enum class Op : std::uint8_t {
        ld,
        st,
        mov,
        cvta,
        add,
        sub,
        mul,
        mad,
        fma,
        div,
        rem,
        min,
        max,
        neg,
        abs,
        and_,
        or_,
        xor_,
        not_,
        shl,
        shr,
        setp,
        selp,
        cvt,
        bra,
        ret,
        sqrt,
        rcp,
        ex2,
        bar,
        shfl,
        label,
        comment,
        dp4a,
        dp2a,
        prmt,
        bfe,
        cp_async,
        cp_commit,
        cp_wait,
        prefetch,
        bulk_prefetch,
        griddepcontrol,
        warp_bar,
        mbarrier_init,
        mbarrier_arrive,
        mbarrier_try_wait,
        bulk_copy,
        fence,
        ldmatrix,
        mma,
        prefetch_tensormap,
        tensor_load,
        tensor_store,
        bulk_commit,
        bulk_wait,
        setmaxnreg,
        wgmma_fence,
        wgmma,
        wgmma_commit,
        wgmma_wait,
        cluster,
        named_bar
    };
    struct Decoded {
        Op op = Op::comment;
        ptx::Type type = ptx::Type::b32;          // the instruction's type (cvt: the destination's)
        ptx::Type source = ptx::Type::b32;        // cvt's source type
        std::string cmp;                          // setp
        bool combine_and = false;                 // setp.<cmp>.and
        bool nan = false;                         // min/max.NaN
        bool wide = false, high = false;          // mul.wide, mul.hi
        bool shared = false, param = false;       // ld/st space
        bool a_signed = false, b_signed = false;  // dp4a, dp2a operands
        bool dp2a_high = false;                   // dp2a.hi: b's bytes 2 and 3
        bool expect_tx = false;                   // mbarrier.arrive.expect_tx: bytes announced
        bool transpose = false;                   // ldmatrix.trans
        bool multicast = false;                   // cp.async.bulk.tensor ... .multicast::cluster
        unsigned n = 0;                           // wgmma's n; the rank of a tensor copy
        bool a_registers = false;                 // wgmma with a from registers
        bool arrive = false;                      // bar.arrive (a named barrier without the wait)
        unsigned barrier = 0;                     // a named barrier's id (its thread count in n)
        std::string shuffle;                      // shfl mode
        int vector = 1;                           // ld/st .v2/.v4
        ptx::Rounding rounding = ptx::Rounding::none;
        std::size_t target = 0;  // bra: instruction index
        ptx::Instruction const* in = nullptr;
    };
    struct PendingCopy {
        std::uint64_t shared_address, global_address;
        std::size_t bytes, source_bytes;
    };
    // A box of a tensor map at coordinates (innermost first), and the shared address of its copy.
    struct TensorBox {
        std::size_t index;  // the instruction that moves it
        ptx::TensorMapSpec spec;
        std::array<std::int64_t, 5> coordinates;
        std::uint64_t shared_address;
    };
    struct Thread {
        std::vector<std::uint64_t> regs;
        std::vector<PendingCopy> open_group;                  // cp.async since the last commit
        std::deque<std::vector<PendingCopy>> committed;       // committed groups, oldest first
        std::vector<TensorBox> open_stores;                   // TMA stores since the last bulk commit
        std::deque<std::vector<TensorBox>> committed_stores;  // committed bulk groups, oldest first
        std::size_t pc = 0;
        unsigned tid[3]{};
        // waiting: at an mbarrier.try_wait whose phase has not completed, retried every round.
        // warpgroup: at a wgmma instruction, until the warpgroup's 128 threads are there.
        enum class State {
            running,
            barrier,
            warp_barrier,
            shuffle,
            waiting,
            warpgroup,
            named_barrier,
            done
        } state = State::running;
        unsigned named = 0;  // at a named barrier: its id
    };
    // A warpgroup's MMAs in flight: recorded at issue, computed when a wgmma.wait_group retires
    // their group. `in_flight` holds, per accumulator register of an MMA not yet retired, its 128
    // threads' values as the MMAs so far leave them (the registers themselves hold NaN meanwhile).
    struct PendingMma {
        std::size_t index;
        std::uint64_t a_descriptor, b_descriptor;
        bool accumulate;
        std::vector<std::array<std::uint32_t, 4>> a_fragments;  // a from registers: the 128 threads' at issue
    };
    struct Warpgroup {
        std::vector<PendingMma> open;
        std::deque<std::vector<PendingMma>> committed;
        std::map<std::uint32_t, std::array<std::uint64_t, 128>> in_flight;
    };
    static constexpr std::uint32_t in_flight_accumulator = 0x7fc00badu;  // a quiet NaN
    // An mbarrier (by shared address): its arrivals still expected this phase, the bytes announced
    // and not landed, the phases completed, and the bulk copies counted against it. A copy poisons
    // its destination when issued and lands only when a thread waits on the barrier with every
    // arrival in, so reading the bytes before the wait, or the old bytes after the copy was issued,
    // finds the poison.
    struct BulkCopy {
        std::uint64_t shared_address, global_address;
        std::size_t bytes;
        std::optional<TensorBox> tensor;  // a TMA load: the box, global_address unused
    };
    struct Mbarrier {
        unsigned expected = 0, pending = 0;
        std::int64_t tx = 0;
        std::uint64_t completed = 0;
        std::vector<BulkCopy> copies;
    };
    struct Range {
        std::uintptr_t begin;
        std::size_t bytes;
    };

    static ptx::Type parse_type(std::string const& s) {
        for (int t = 0; t <= static_cast<int>(ptx::Type::f64); ++t)
            if (ptx::name_of(static_cast<ptx::Type>(t)) == s) return static_cast<ptx::Type>(t);
        throw SimulationError("unknown type ." + s);
    }
    static bool is_type(std::string const& s) {
        for (int t = 0; t <= static_cast<int>(ptx::Type::f64); ++t)
            if (ptx::name_of(static_cast<ptx::Type>(t)) == s) return true;
        return false;
    }

    [[noreturn]] void fail(std::size_t index, std::string const& why) const {
        std::ostringstream s;
        s << kernel_.name() << ", instruction " << index << " (" << kernel_.instructions()[index].opcode
          << "): " << why;
        throw SimulationError(s.str());
    }

    void decode() {
        auto const body = kernel_.instructions();
        std::map<std::uint32_t, std::size_t> labels;
        for (std::size_t i = 0; i < body.size(); ++i)
            if (body[i].kind == ptx::Instruction::Kind::label) labels[body[i].placed.id()] = i;
        std::uint32_t max_reg = 0;
        auto note_reg = [&](ptx::Reg r) { max_reg = std::max(max_reg, r.id() + 1); };
        for (std::size_t i = 0; i < body.size(); ++i) {
            ptx::Instruction const& in = body[i];
            Decoded d;
            d.in = &in;
            if (in.kind == ptx::Instruction::Kind::label) d.op = Op::label;
            if (in.kind != ptx::Instruction::Kind::operation) {
                code_.push_back(d);
                continue;
            }
            for (auto const& use : in.operands) {
                if (auto const* r = std::get_if<ptx::RegUse>(&use)) note_reg(r->reg);
                if (auto const* v = std::get_if<ptx::VectorUse>(&use))
                    for (auto const& e : v->elements) note_reg(e.reg);
                if (auto const* a = std::get_if<ptx::AddressUse>(&use))
                    if (auto const* r = std::get_if<ptx::Reg>(&a->address.base)) note_reg(*r);
                if (auto const* t = std::get_if<ptx::TensorAddressUse>(&use)) {
                    note_reg(t->map.reg);
                    for (auto const& c : t->coordinates) note_reg(c.reg);
                }
            }
            if (in.guard) note_reg(in.guard->predicate);
            std::vector<std::string> tokens;
            std::stringstream ss(in.opcode);
            for (std::string t; std::getline(ss, t, '.');) tokens.push_back(t);
            std::string const& head = tokens[0];
            static std::map<std::string, Op> const ops{
                {"ld", Op::ld},     {"st", Op::st},     {"mov", Op::mov},   {"cvta", Op::cvta},
                {"add", Op::add},   {"sub", Op::sub},   {"mul", Op::mul},   {"mad", Op::mad},
                {"fma", Op::fma},   {"div", Op::div},   {"rem", Op::rem},   {"min", Op::min},
                {"max", Op::max},   {"neg", Op::neg},   {"abs", Op::abs},   {"and", Op::and_},
                {"or", Op::or_},    {"xor", Op::xor_},  {"not", Op::not_},  {"shl", Op::shl},
                {"shr", Op::shr},   {"setp", Op::setp}, {"selp", Op::selp}, {"cvt", Op::cvt},
                {"bra", Op::bra},   {"ret", Op::ret},   {"sqrt", Op::sqrt}, {"rcp", Op::rcp},
                {"bar", Op::bar},   {"shfl", Op::shfl}, {"ex2", Op::ex2},   {"dp4a", Op::dp4a},
                {"dp2a", Op::dp2a}, {"prmt", Op::prmt}, {"bfe", Op::bfe},   {"prefetch", Op::prefetch}};
            if (head == "griddepcontrol") {  // one grid at a time: nothing to wait for or let start
                d.op = Op::griddepcontrol;
                code_.push_back(d);
                continue;
            }
            if (head == "fence") {  // one block at a time: its threads see every write in order
                d.op = Op::fence;
                code_.push_back(d);
                continue;
            }
            if (head == "mbarrier" && std::find(tokens.begin(), tokens.end(), "shared::cluster") != tokens.end()) {
                d.op = Op::cluster;  // an arrival on a cluster address (maybe another block's barrier)
                code_.push_back(d);
                continue;
            }
            if (head == "barrier" || head == "mapa") {  // barrier.cluster.*, mapa.shared::cluster
                if (head == "barrier" && (tokens.size() < 2 || tokens[1] != "cluster")) fail(i, "not simulated");
                d.op = Op::cluster;
                code_.push_back(d);
                continue;
            }
            if (head == "setmaxnreg") {  // setmaxnreg.{inc,dec}.sync.aligned.u32 N: the register budget only
                auto const* n = in.operands.size() == 1 ? std::get_if<ptx::ImmUse>(&in.operands[0]) : nullptr;
                if (tokens.size() != 5 || (tokens[1] != "inc" && tokens[1] != "dec") || tokens[2] != "sync" ||
                    tokens[3] != "aligned" || tokens[4] != "u32" || n == nullptr || !n->value.is_integer())
                    fail(i, "setmaxnreg form not simulated");
                std::int64_t const registers = n->value.integer();
                if (registers < 24 || registers > 256 || registers % 8 != 0)
                    fail(i, "setmaxnreg of " + std::to_string(registers) + " registers (24 to 256, a multiple of 8)");
                d.op = Op::setmaxnreg;
                code_.push_back(d);
                continue;
            }
            if (head == "wgmma") {
                decode_wgmma(i, in, tokens, d);
                code_.push_back(d);
                continue;
            }
            if (head == "prefetch" && tokens.size() == 2 && tokens[1] == "tensormap") {
                d.op = Op::prefetch_tensormap;
                code_.push_back(d);
                continue;
            }
            if (head == "mbarrier") {  // mbarrier.init / .arrive[.expect_tx] / .try_wait.parity
                d.op = tokens[1] == "init"     ? Op::mbarrier_init
                       : tokens[1] == "arrive" ? Op::mbarrier_arrive
                       : tokens[1] == "try_wait" && tokens[2] == "parity"
                           ? Op::mbarrier_try_wait
                           : (fail(i, "mbarrier form not simulated"), Op::fence);
                d.expect_tx = tokens[1] == "arrive" && tokens[2] == "expect_tx";
                code_.push_back(d);
                continue;
            }
            if (head == "ldmatrix") {  // ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16
                d.op = Op::ldmatrix;
                d.vector = tokens[4][1] - '0';
                d.transpose = tokens[5] == "trans";
                code_.push_back(d);
                continue;
            }
            if (head == "mma") {  // mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
                if (tokens.size() != 10 || tokens[3] != "m16n8k16" || tokens[4] != "row" || tokens[5] != "col")
                    fail(i, "mma form not simulated");
                d.op = Op::mma;
                d.source = tokens[7] == "bf16" ? ptx::Type::bf16 : ptx::Type::f16;
                code_.push_back(d);
                continue;
            }
            if (head == "bar" && tokens.size() >= 2 && tokens[1] == "warp") {
                d.op = Op::warp_bar;
                code_.push_back(d);
                continue;
            }
            if (head == "bar" && (in.operands.size() == 2 || (tokens.size() >= 2 && tokens[1] == "arrive"))) {
                // bar.sync / bar.arrive id, threads: a named barrier.
                auto const immediate = [&](std::size_t o) {
                    auto const* v = o < in.operands.size() ? std::get_if<ptx::ImmUse>(&in.operands[o]) : nullptr;
                    if (v == nullptr || !v->value.is_integer())
                        fail(i, "named barriers with register operands not simulated");
                    return static_cast<unsigned>(v->value.integer());
                };
                d.op = Op::named_bar;
                d.barrier = immediate(0);
                d.n = immediate(1);
                d.arrive = tokens[1] == "arrive";
                if (d.barrier > 15 || d.n == 0 || d.n % 32 != 0)
                    fail(i, "a named barrier's id or thread count is out of range");
                code_.push_back(d);
                continue;
            }
            if (head == "cp" && tokens.size() >= 3 && tokens[1] == "async" && tokens[2] == "bulk") {
                if (tokens.size() >= 4 && tokens[3] == "shared::cluster")
                    d.op = Op::bulk_copy;
                else if (tokens.size() >= 5 && tokens[3] == "prefetch" && tokens[4] == "L2")
                    d.op = Op::bulk_prefetch;
                else if (tokens.size() == 4 && tokens[3] == "commit_group")
                    d.op = Op::bulk_commit;
                else if (tokens.size() >= 4 && tokens[3] == "wait_group" &&
                         (tokens.size() == 4 || (tokens.size() == 5 && tokens[4] == "read")))
                    d.op = Op::bulk_wait;
                else if (tokens.size() >= 4 && tokens[3] == "tensor")
                    decode_tensor_copy(i, in, tokens, d);
                else
                    fail(i, "bulk copy form not simulated");
                code_.push_back(d);
                continue;
            }
            if (head == "cp" && tokens.size() >= 3 && tokens[1] == "async") {
                d.op = tokens[2] == "commit_group" ? Op::cp_commit
                       : tokens[2] == "wait_group" ? Op::cp_wait
                                                   : Op::cp_async;
                code_.push_back(d);
                continue;
            }
            auto const op = ops.find(head);
            if (op == ops.end()) fail(i, "not simulated");
            d.op = op->second;
            if (d.op == Op::dp4a || d.op == Op::dp2a) {
                // dp4a.<a>.<b>, dp2a.{lo,hi}.<a>.<b>
                d.dp2a_high = d.op == Op::dp2a && tokens[1] == "hi";
                d.a_signed = tokens[tokens.size() - 2] == "s32";
                d.b_signed = tokens.back() == "s32";
                d.type = ptx::Type::s32;
                code_.push_back(d);
                continue;
            }
            if (d.op == Op::prefetch) {
                code_.push_back(d);
                continue;
            }
            if (d.op == Op::bra) {
                auto const& l = std::get<ptx::LabelUse>(in.operands[0]).label;
                d.target = labels.at(l.id());
            } else if (d.op == Op::ret || d.op == Op::bar) {  // bar.sync and bar.warp.sync
            } else if (d.op == Op::cvt) {
                d.type = parse_type(tokens[tokens.size() - 2]);
                d.source = parse_type(tokens.back());
                for (std::size_t t = 1; t + 2 < tokens.size(); ++t) {
                    static std::map<std::string, ptx::Rounding> const r{
                        {"rn", ptx::Rounding::rn},   {"rz", ptx::Rounding::rz},   {"rm", ptx::Rounding::rm},
                        {"rp", ptx::Rounding::rp},   {"rni", ptx::Rounding::rni}, {"rzi", ptx::Rounding::rzi},
                        {"rmi", ptx::Rounding::rmi}, {"rpi", ptx::Rounding::rpi}};
                    if (auto it = r.find(tokens[t]); it != r.end())
                        d.rounding = it->second;
                    else if (tokens[t] != "ftz")
                        fail(i, "cvt modifier ." + tokens[t] + " not simulated");
                }
            } else {
                d.type = parse_type(tokens.back());
                for (std::size_t t = 1; t + 1 < tokens.size(); ++t) {
                    std::string const& m = tokens[t];
                    if (m == "NaN")
                        d.nan = true;
                    else if (m == "wide")
                        d.wide = true;
                    else if (m == "hi")
                        d.high = true;
                    else if (m == "shared")
                        d.shared = true;
                    else if (m == "param")
                        d.param = true;
                    else if (m == "v2")
                        d.vector = 2;
                    else if (m == "v4")
                        d.vector = 4;
                    else if (d.op == Op::setp && t == 1)
                        d.cmp = m;
                    else if (d.op == Op::setp && m == "and")
                        d.combine_and = true;
                    else if (d.op == Op::shfl && (m == "bfly" || m == "down" || m == "up" || m == "idx"))
                        d.shuffle = m;
                    else if (m == "rn" || m == "lo" || m == "approx" || m == "ftz" || m == "global" || m == "to" ||
                             m == "sync" || m == "nc" || m == "cs" || m == "cg" || m == "ca")
                        continue;
                    else
                        fail(i, "modifier ." + m + " not simulated");
                }
                if (d.op == Op::setp && d.cmp.empty()) fail(i, "setp without a comparison");
                if (d.op == Op::shfl && d.shuffle.empty()) fail(i, "shfl mode not simulated");
            }
            code_.push_back(d);
        }
        register_count_ = max_reg;
    }

    // cp.async.bulk.tensor.<r>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes[.multicast::cluster]
    // [smem], [map, {c...}], [mbar][, mask] and cp.async.bulk.tensor.<r>d.global.shared::cta.tile.bulk_group
    // [map, {c...}], [smem].
    void decode_tensor_copy(std::size_t i, ptx::Instruction const& in, std::vector<std::string> const& tokens,
                            Decoded& d) {
        if (tokens.size() < 9 || tokens[4].size() != 2 || tokens[4][1] != 'd' || tokens[4][0] < '1' ||
            tokens[4][0] > '5' || tokens[7] != "tile")
            fail(i, "tensor copy form not simulated");
        d.n = static_cast<unsigned>(tokens[4][0] - '0');
        ptx::TensorAddressUse const* tensor = nullptr;
        if (tokens[5] == "shared::cluster" && tokens[6] == "global" && tokens[8] == "mbarrier::complete_tx::bytes" &&
            (tokens.size() == 9 || (tokens.size() == 10 && tokens[9] == "multicast::cluster"))) {
            d.op = Op::tensor_load;
            d.multicast = tokens.size() == 10;
            if (in.operands.size() != (d.multicast ? 4u : 3u) ||
                !std::holds_alternative<ptx::AddressUse>(in.operands[0]) ||
                !std::holds_alternative<ptx::AddressUse>(in.operands[2]))
                fail(i, "tensor load operands not simulated");
            tensor = std::get_if<ptx::TensorAddressUse>(&in.operands[1]);
        } else if (tokens.size() == 9 && tokens[5] == "global" && tokens[6] == "shared::cta" &&
                   tokens[8] == "bulk_group") {
            d.op = Op::tensor_store;
            if (in.operands.size() != 2 || !std::holds_alternative<ptx::AddressUse>(in.operands[1]))
                fail(i, "tensor store operands not simulated");
            tensor = std::get_if<ptx::TensorAddressUse>(&in.operands[0]);
        } else {
            fail(i, "tensor copy form not simulated");
        }
        if (tensor == nullptr || tensor->coordinates.size() != d.n)
            fail(i, "a " + std::to_string(d.n) + "-d tensor copy without " + std::to_string(d.n) + " coordinates");
    }

    // wgmma.fence / .commit_group / .wait_group N .sync.aligned, and
    // wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<f16|bf16>.<same> {d}, adesc, bdesc, p, ±1, ±1, tA, tB
    // or {d}, {a0, a1, a2, a3}, bdesc, p, ±1, ±1, tB; m64n<N>k8.f32.tf32.tf32 {d}, adesc, bdesc, p, ±1, ±1.
    void decode_wgmma(std::size_t i, ptx::Instruction const& in, std::vector<std::string> const& tokens, Decoded& d) {
        auto const sync_aligned = [&](std::size_t at) {
            return tokens.size() > at + 1 && tokens[at] == "sync" && tokens[at + 1] == "aligned";
        };
        if (tokens.size() == 4 && tokens[1] == "fence" && sync_aligned(2)) {
            d.op = Op::wgmma_fence;
            return;
        }
        if (tokens.size() == 4 && tokens[1] == "commit_group" && sync_aligned(2)) {
            d.op = Op::wgmma_commit;
            return;
        }
        if (tokens.size() == 4 && tokens[1] == "wait_group" && sync_aligned(2)) {
            auto const* n = in.operands.size() == 1 ? std::get_if<ptx::ImmUse>(&in.operands[0]) : nullptr;
            if (n == nullptr || !n->value.is_integer() || n->value.integer() < 0 || n->value.integer() > 7)
                fail(i, "wgmma.wait_group takes an immediate of 0 to 7");
            d.op = Op::wgmma_wait;
            return;
        }
        if (tokens.size() != 8 || tokens[1] != "mma_async" || !sync_aligned(2)) fail(i, "wgmma form not simulated");
        if (tokens[5] != "f32" || tokens[6] != tokens[7] ||
            (tokens[6] != "f16" && tokens[6] != "bf16" && tokens[6] != "tf32"))
            fail(i, "wgmma types ." + tokens[5] + "." + tokens[6] + "." + tokens[7] + " not simulated");
        bool const tf32 = tokens[6] == "tf32";
        std::string const k = tf32 ? "k8" : "k16";
        unsigned n = 0;
        if (std::sscanf(tokens[4].c_str(), "m64n%u", &n) != 1 || tokens[4] != "m64n" + std::to_string(n) + k)
            fail(i, "wgmma shape ." + tokens[4] + " not simulated (m64nN" + k + " for ." + tokens[6] + ")");
        if (n < 8 || n > 256 || n % 8 != 0)
            fail(i, "wgmma n of " + std::to_string(n) + " (a multiple of 8 from 8 to 256)");
        auto const& ops = in.operands;
        auto const* fragment = std::get_if<ptx::VectorUse>(&ops[1]);
        d.a_registers = fragment != nullptr;
        if (tf32 && d.a_registers) fail(i, "wgmma with .tf32 a from registers not simulated");
        // tf32 has no transpose immediates.
        std::size_t const operands = (d.a_registers ? 7u : 8u) - (tf32 ? 2u : 0u);
        if (ops.size() != operands) fail(i, "wgmma with " + std::to_string(ops.size()) + " operands not simulated");
        auto const* accumulators = std::get_if<ptx::VectorUse>(&ops[0]);
        if (accumulators == nullptr || accumulators->elements.size() != n / 2)
            fail(i, "wgmma m64n" + std::to_string(n) + "k16 needs " + std::to_string(n / 2) + " accumulator registers");
        if (d.a_registers && fragment->elements.size() != 4) fail(i, "wgmma's a from registers is 4 .b32 registers");
        if (!std::holds_alternative<ptx::RegUse>(ops[2]) || !std::holds_alternative<ptx::RegUse>(ops[3]) ||
            !(d.a_registers || std::holds_alternative<ptx::RegUse>(ops[1])))
            fail(i, "wgmma descriptors and scale-d must be registers");
        for (std::size_t o = 4; o < ops.size(); ++o) {
            auto const* imm = std::get_if<ptx::ImmUse>(&ops[o]);
            if (imm == nullptr || !imm->value.is_integer())
                fail(i, "wgmma operand " + std::to_string(o) + " is not an integer immediate");
            std::int64_t const v = imm->value.integer();
            if (o < 6 ? (v != 1 && v != -1) : (v != 0 && v != 1))
                fail(i, "wgmma operand " + std::to_string(o) + " of " + std::to_string(v) +
                            (o < 6 ? " (1 or -1)" : " (0 or 1)"));
        }
        d.op = Op::wgmma;
        d.n = n;
        d.source = tf32 ? ptx::Type::f32 : tokens[6] == "bf16" ? ptx::Type::bf16 : ptx::Type::f16;
    }

    // ---- values

    [[noreturn]] double fail_value(std::size_t index, std::string const& what) const {
        fail(index, what + " not simulated");
    }

    // IEEE binary16 to binary32 (exact).
    static float half_to_float(std::uint16_t h) {
        std::uint32_t const sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
        std::uint32_t const exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
        if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
        float const magnitude = exponent == 0
                                    ? std::ldexp(static_cast<float>(mantissa), -24)
                                    : std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
        return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
    }

    static std::uint64_t mask(ptx::Type t, std::uint64_t v) {
        int const bits = ptx::bits_of(t);
        if (t == ptx::Type::pred) return v & 1;
        return bits >= 64 ? v : v & ((std::uint64_t{1} << bits) - 1);
    }
    static float f32(std::uint64_t v) { return std::bit_cast<float>(static_cast<std::uint32_t>(v)); }
    static double f64(std::uint64_t v) { return std::bit_cast<double>(v); }
    static std::uint64_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
    static std::uint64_t bits(double f) { return std::bit_cast<std::uint64_t>(f); }
    static std::int64_t signed_value(ptx::Type t, std::uint64_t v) {
        int const b = ptx::bits_of(t);
        if (b >= 64) return static_cast<std::int64_t>(v);
        std::uint64_t const m = std::uint64_t{1} << (b - 1);
        v &= (m << 1) - 1;
        return static_cast<std::int64_t>((v ^ m) - m);
    }

    std::uint64_t special(std::string const& name, Thread const& t) const {
        static std::map<std::string, int> const names{{"%tid.x", 0},
                                                      {"%tid.y", 1},
                                                      {"%tid.z", 2},
                                                      {"%ntid.x", 3},
                                                      {"%ntid.y", 4},
                                                      {"%ntid.z", 5},
                                                      {"%ctaid.x", 6},
                                                      {"%ctaid.y", 7},
                                                      {"%ctaid.z", 8},
                                                      {"%nctaid.x", 9},
                                                      {"%nctaid.y", 10},
                                                      {"%nctaid.z", 11},
                                                      {"%laneid", 12},
                                                      {"%warpid", 13},
                                                      {"%cluster_ctarank", 14},
                                                      {"%cluster_nctarank", 15}};
        auto const it = names.find(name);
        if (it == names.end()) {
            if (auto s = symbols_.find(name); s != symbols_.end()) return s->second;
            // A tensor map parameter's address (mov.u64 r, name): the launch's copy of its bytes.
            if (auto m = tensor_maps_.find(name); m != tensor_maps_.end())
                return reinterpret_cast<std::uintptr_t>(m->second.get());
            throw SimulationError("unknown operand text " + name);
        }
        unsigned const linear = t.tid[0] + block_.x * (t.tid[1] + block_.y * t.tid[2]);
        switch (it->second) {
            case 0: return t.tid[0];
            case 1: return t.tid[1];
            case 2: return t.tid[2];
            case 3: return block_.x;
            case 4: return block_.y;
            case 5: return block_.z;
            case 6: return block_index_[0];
            case 7: return block_index_[1];
            case 8: return block_index_[2];
            case 9: return grid_.x;
            case 10: return grid_.y;
            case 11: return grid_.z;
            case 12: return linear % 32;
            case 13: return linear / 32;
            case 14: return 0;  // a cluster of one block (run() refuses larger ones)
            default: return 1;
        }
    }

    std::uint64_t read(Thread const& t, ptx::OperandUse const& use, ptx::Type type) const {
        if (auto const* r = std::get_if<ptx::RegUse>(&use)) return mask(type, t.regs[r->reg.id()]);
        if (auto const* imm = std::get_if<ptx::ImmUse>(&use)) {
            if (imm->value.is_float()) {
                if (type == ptx::Type::f64) return bits(imm->value.floating());
                return bits(static_cast<float>(imm->value.floating()));
            }
            return mask(type, static_cast<std::uint64_t>(imm->value.integer()));
        }
        if (auto const* text = std::get_if<ptx::TextUse>(&use)) return mask(type, special(text->text, t));
        throw SimulationError("operand kind not readable here");
    }
    std::uint64_t address_of(Thread const& t, ptx::Address const& a) const {
        std::uint64_t base;
        if (auto const* r = std::get_if<ptx::Reg>(&a.base))
            base = t.regs[r->id()];
        else
            base = symbols_.at(std::get<ptx::Symbol>(a.base).name);
        return base + static_cast<std::uint64_t>(a.offset);
    }

    Mbarrier& mbarrier(std::size_t index, std::uint64_t address) {
        auto const it = mbarriers_.find(address);
        if (it == mbarriers_.end()) fail(index, "mbarrier used before mbarrier.init");
        return it->second;
    }
    // A phase completes once every arrival is in and every announced byte has landed.
    static void complete_phase(Mbarrier& mb) {
        if (mb.pending != 0 || mb.tx != 0 || !mb.copies.empty()) return;
        ++mb.completed;
        mb.pending = mb.expected;
    }

    void* global(std::size_t index, std::uint64_t address, std::size_t bytes) const {
        if (address % bytes != 0)
            fail(index, "global access of " + std::to_string(bytes) + " bytes at misaligned address " +
                            std::to_string(address));
        if (in_buffers(address, bytes)) return reinterpret_cast<void*>(address);
        fail(index, "global access outside the allowed buffers at " + std::to_string(address));
    }
    [[nodiscard]] bool in_buffers(std::uint64_t address, std::size_t bytes) const {
        return std::any_of(ranges_.begin(), ranges_.end(),
                           [&](auto const& r) { return address >= r.begin && address + bytes <= r.begin + r.bytes; });
    }
    // `alignment` 0: the access's own size (bulk copies need only 16).
    void* shared(std::size_t index, std::uint64_t address, std::size_t bytes, std::size_t alignment = 0) {
        if (address % (alignment ? alignment : bytes) != 0) fail(index, "misaligned shared access");
        if (address + bytes > shared_memory_.size()) fail(index, "shared access out of bounds");
        return shared_memory_.data() + address;
    }

    // ---- execution

    void run_block(unsigned bx, unsigned by, unsigned bz) {
        block_index_[0] = bx, block_index_[1] = by, block_index_[2] = bz;
        shared_memory_.assign(shared_bytes_ + dynamic_shared_bytes_, 0xCD);  // poisoned: a read before a write shows
        unsigned const count = block_.x * block_.y * block_.z;
        std::vector<Thread> threads(count);
        for (unsigned i = 0; i < count; ++i) {
            threads[i].regs.assign(register_count_, 0);
            threads[i].tid[0] = i % block_.x;
            threads[i].tid[1] = (i / block_.x) % block_.y;
            threads[i].tid[2] = i / (block_.x * block_.y);
        }
        mbarriers_.clear();
        named_barriers_.fill(NamedBarrier{});
        block_threads_ = &threads;
        warpgroups_.assign((count + 127) / 128, Warpgroup{});
        for (;;) {
            progress_ = false;
            // A warp at a time, as far as it goes: its bar.warp.sync released as soon as all its
            // lanes are there, so a warp runs ahead of the others (a producer before its consumers)
            // until it must wait for them.
            for (unsigned w = 0; w * 32 < count; ++w) {
                unsigned const first = w * 32, last = std::min(count, first + 32);
                for (;;) {
                    for (unsigned i = first; i < last; ++i)
                        if (threads[i].state == Thread::State::running || threads[i].state == Thread::State::waiting) {
                            threads[i].state = Thread::State::running;
                            step_until_blocked(threads[i]);
                        }
                    if (!release_warp_barrier(threads, first, last) && !release_shuffle(threads, first, last)) break;
                }
            }
            bool released = release_warpgroups(threads);
            bool const ran = progress_;
            std::size_t done = 0, at_barrier = 0, at_shuffle = 0, at_warpgroup = 0, at_named = 0;
            for (auto const& t : threads) {
                done += t.state == Thread::State::done;
                at_named += t.state == Thread::State::named_barrier;
                at_barrier += t.state == Thread::State::barrier;
                at_shuffle += t.state == Thread::State::shuffle;
                at_warpgroup += t.state == Thread::State::warpgroup;
            }
            if (done == count) return;
            if (at_barrier > 0 && at_barrier + done == count) {
                for (auto& t : threads)
                    if (t.state == Thread::State::barrier) t.state = Thread::State::running, ++t.pc;
                released = true;
            }
            std::size_t at_mbarrier = 0;
            for (auto const& t : threads) at_mbarrier += t.state == Thread::State::waiting;
            if (!ran && !released)
                throw SimulationError(
                    kernel_.name() + ": deadlock (" + std::to_string(at_mbarrier) + " threads at mbarrier waits, " +
                    std::to_string(at_barrier) + " threads at bar.sync, " + std::to_string(at_shuffle) +
                    " at shfl.sync, " + std::to_string(at_warpgroup) + " at warpgroup-collective wgmma, " +
                    std::to_string(at_named) + " at named barriers, " + std::to_string(done) + " done)");
        }
    }

    // bar.sync / bar.arrive id, n: the thread's arrival counted on barrier id; once n threads have
    // arrived, every thread waiting there goes on and the count starts again. bar.arrive never waits.
    void arrive_at_named_barrier(Thread& t, std::size_t index, Decoded const& d) {
        NamedBarrier& b = named_barriers_[d.barrier];
        if (b.arrived != 0 && b.threads != d.n)
            fail(index, "barrier " + std::to_string(d.barrier) + " used with " + std::to_string(d.n) + " and " +
                            std::to_string(b.threads) + " threads in one phase");
        b.threads = d.n;
        ++t.pc;
        if (!d.arrive) t.state = Thread::State::named_barrier, t.named = d.barrier;
        if (++b.arrived < b.threads) return;
        b.arrived = 0;
        for (Thread& other : *block_threads_)
            if (other.state == Thread::State::named_barrier && other.named == d.barrier)
                other.state = Thread::State::running;
    }

    // bar.warp.sync: released once every lane of the warp that has not exited is there.
    static bool release_warp_barrier(std::vector<Thread>& threads, unsigned first, unsigned last) {
        bool any = false, all = true;
        for (unsigned i = first; i < last; ++i) {
            any |= threads[i].state == Thread::State::warp_barrier;
            all &= threads[i].state == Thread::State::warp_barrier || threads[i].state == Thread::State::done;
        }
        if (!any || !all) return false;
        for (unsigned i = first; i < last; ++i)
            if (threads[i].state == Thread::State::warp_barrier)
                threads[i].state = Thread::State::running, ++threads[i].pc;
        return true;
    }

    // wgmma.mma_async, .commit_group and .wait_group (.sync.aligned over the warpgroup): done once
    // the warpgroup's 128 threads are all at the same one.
    bool release_warpgroups(std::vector<Thread>& threads) {
        bool released = false;
        auto const count = static_cast<unsigned>(threads.size());
        for (unsigned g = 0; g * 128 < count; ++g) {
            unsigned const first = g * 128, last = std::min(count, first + 128);
            std::size_t index = 0;
            bool any = false, all = true, exited = false;
            for (unsigned i = first; i < last; ++i) {
                bool const here = threads[i].state == Thread::State::warpgroup;
                if (here && !any) index = threads[i].pc;
                any |= here;
                all &= here;
                exited |= threads[i].state == Thread::State::done;
            }
            if (!any) continue;
            if (last - first != 128)
                fail(index, "a warpgroup-collective instruction in a block of " + std::to_string(count) +
                                " threads (not a whole number of warpgroups)");
            if (exited) fail(index, "a warpgroup-collective instruction that threads of the warpgroup exited before");
            if (!all) continue;
            for (unsigned i = first; i < last; ++i)
                if (threads[i].pc != index)
                    fail(index, "threads of warpgroup " + std::to_string(g) + " at different wgmma instructions (" +
                                    std::to_string(index) + " and " + std::to_string(threads[i].pc) + ")");
            Warpgroup& wg = warpgroups_[g];
            switch (code_[index].op) {
                case Op::wgmma: issue_mma(threads, first, index); break;
                case Op::wgmma_commit:
                    wg.committed.push_back(std::move(wg.open));
                    wg.open.clear();
                    break;
                default: retire_mmas(threads, first, index); break;
            }
            for (unsigned i = first; i < last; ++i) threads[i].state = Thread::State::running, ++threads[i].pc;
            released = true;
        }
        return released;
    }

    // wgmma.mma_async issued: recorded with the descriptors and scale-d (the same in every thread)
    // and a's registers where a comes from them, its accumulators taken out of the registers until
    // it retires.
    void issue_mma(std::vector<Thread>& threads, unsigned first, std::size_t index) {
        auto const& ops = code_[index].in->operands;
        bool const a_registers = code_[index].a_registers;
        auto const reg = [&](std::size_t o) { return std::get<ptx::RegUse>(ops[o]).reg.id(); };
        auto const a_descriptor = [&](Thread const& t) { return a_registers ? std::uint64_t{0} : t.regs[reg(1)]; };
        Thread const& lead = threads[first];
        PendingMma mma{index, a_descriptor(lead), lead.regs[reg(2)], (lead.regs[reg(3)] & 1) != 0, {}};
        for (unsigned i = first; i < first + 128; ++i) {
            if (a_descriptor(threads[i]) != mma.a_descriptor || threads[i].regs[reg(2)] != mma.b_descriptor ||
                ((threads[i].regs[reg(3)] & 1) != 0) != mma.accumulate)
                fail(index, "the descriptors or scale-d differ between threads of the warpgroup (thread " +
                                std::to_string(i) + ")");
            if (a_registers) {
                auto const& fragment = std::get<ptx::VectorUse>(ops[1]).elements;
                std::array<std::uint32_t, 4> values{};
                for (std::size_t r = 0; r < 4; ++r)
                    values[r] = static_cast<std::uint32_t>(threads[i].regs[fragment[r].reg.id()]);
                mma.a_fragments.push_back(values);
            }
        }
        if (!a_registers) check_descriptor(index, mma.a_descriptor, "a");
        check_descriptor(index, mma.b_descriptor, "b");
        Warpgroup& wg = warpgroups_[first / 128];
        for (auto const& e : std::get<ptx::VectorUse>(ops[0]).elements) {
            auto const [it, fresh] = wg.in_flight.try_emplace(e.reg.id());
            for (unsigned l = 0; l < 128; ++l) {
                std::uint64_t& r = threads[first + l].regs[e.reg.id()];
                if (fresh) it->second[l] = r;
                r = in_flight_accumulator;
            }
        }
        wg.open.push_back(mma);
    }

    // wgmma.wait_group N: the oldest committed groups computed until at most N are pending; the
    // accumulators no MMA still in flight writes get their values back.
    void retire_mmas(std::vector<Thread>& threads, unsigned first, std::size_t index) {
        auto const pending =
            static_cast<std::size_t>(std::get<ptx::ImmUse>(code_[index].in->operands[0]).value.integer());
        Warpgroup& wg = warpgroups_[first / 128];
        while (wg.committed.size() > pending) {
            for (PendingMma const& mma : wg.committed.front()) compute_mma(wg, mma);
            wg.committed.pop_front();
        }
        std::vector<std::uint32_t> busy;
        auto const note = [&](PendingMma const& mma) {
            for (auto const& e : std::get<ptx::VectorUse>(code_[mma.index].in->operands[0]).elements)
                busy.push_back(e.reg.id());
        };
        for (auto const& group : wg.committed)
            for (PendingMma const& mma : group) note(mma);
        for (PendingMma const& mma : wg.open) note(mma);
        for (auto it = wg.in_flight.begin(); it != wg.in_flight.end();) {
            if (std::find(busy.begin(), busy.end(), it->first) != busy.end()) {
                ++it;
                continue;
            }
            for (unsigned l = 0; l < 128; ++l) threads[first + l].regs[it->first] = it->second[l];
            it = wg.in_flight.erase(it);
        }
    }

    // A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading and
    // stride byte offsets, each in 16-byte units in bits 0-13, 16-29 and 32-45; the base offset in
    // bits 49-51; the swizzle mode in bits 62-63 (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
    struct Descriptor {
        std::uint64_t start, leading, stride;
        unsigned base_offset, swizzle;
    };
    static Descriptor descriptor(std::uint64_t bits) {
        return {(bits & 0x3fff) << 4, ((bits >> 16) & 0x3fff) << 4, ((bits >> 32) & 0x3fff) << 4,
                static_cast<unsigned>((bits >> 49) & 7), static_cast<unsigned>(bits >> 62)};
    }
    void check_descriptor(std::size_t index, std::uint64_t bits, std::string const& which) const {
        constexpr std::uint64_t fields =
            0x3fffull | (0x3fffull << 16) | (0x3fffull << 32) | (7ull << 49) | (3ull << 62);
        Descriptor const d = descriptor(bits);
        if ((bits & ~fields) != 0) fail(index, which + "'s descriptor sets reserved bits");
        if (d.swizzle == 2 || d.swizzle == 3)
            fail(index, which + "'s descriptor: the " + std::string(d.swizzle == 2 ? "64" : "32") +
                            "-byte swizzle not simulated");
        if (d.base_offset != 0) fail(index, which + "'s descriptor: a nonzero matrix base offset not simulated");
        if (d.swizzle == 1 && ((d.start >> 7) & 7) != 0)
            fail(index, which + "'s descriptor: a 128-byte swizzled matrix starting at row " +
                            std::to_string((d.start >> 7) & 7) + " of the swizzle pattern not simulated");
    }

    // The shared address of element (mn, k) of a wgmma operand (mn: m of a, n of b) of `bytes`-wide
    // elements laid out as its descriptor says; the canonical layouts (CUTLASS's make_gmma_desc) in
    // bytes, with kb = k · bytes, K-major unless mn_major (transposed, 16-bit only):
    //   no swizzle, K-major:         start + (mn % 8)·16 + (mn / 8)·SBO + kb % 16 + (kb / 16)·LBO
    //   no swizzle, MN-major:        start + (mn % 8)·2 + (mn / 8)·SBO + (k % 8)·16 + (k / 8)·LBO
    //   128-byte swizzle, K-major:   start + (mn % 8)·128 + (mn / 8)·SBO + kb  (LBO unused)
    //   128-byte swizzle, MN-major:  start + (mn % 64)·2 + (mn / 64)·LBO + (k % 8)·128 + (k / 8)·SBO
    // then, swizzled, address bits 4-6 XOR bits 7-9.
    static std::uint64_t operand_address(Descriptor const& d, bool mn_major, unsigned mn, unsigned k, unsigned bytes) {
        std::uint64_t a = d.start;
        unsigned const kb = k * bytes;
        if (d.swizzle == 0) {
            a += mn_major ? (mn % 8) * 2 + (mn / 8) * d.stride + (k % 8) * 16 + (k / 8) * d.leading
                          : (mn % 8) * 16 + (mn / 8) * d.stride + kb % 16 + (kb / 16) * d.leading;
            return a;
        }
        a += mn_major ? (mn % 64) * 2 + (mn / 64) * d.leading + (k % 8) * 128 + (k / 8) * d.stride
                      : (mn % 8) * 128 + (mn / 8) * d.stride + kb;
        return a ^ (((a >> 7) & 7) << 4);
    }

    // One wgmma.mma_async.m64n<n>k<K>.f32: d = a (64 x K) · b (K x n) + (scale-d ? d : 0), each
    // element the sum in double of d (or 0) and the K products in k order, rounded to f32 once
    // (K = 16 for 16-bit inputs, 8 for tf32: f32 values with the low 13 mantissa bits cleared).
    // Thread t of the warpgroup holds d[4j + 2h + e] = D[16(t / 32) + (t % 32) / 4 + 8h][8j + 2(t % 4) + e].
    void compute_mma(Warpgroup& wg, PendingMma const& mma) {
        std::size_t const index = mma.index;
        Decoded const& d = code_[index];
        auto const& ops = d.in->operands;
        auto const imm = [&](std::size_t o) { return std::get<ptx::ImmUse>(ops[o]).value.integer(); };
        unsigned const n = d.n;
        bool const tf32 = d.source == ptx::Type::f32;
        unsigned const K = tf32 ? 8 : 16, bytes = tf32 ? 4 : 2;
        auto const element = [&](std::uint16_t h) {
            return d.source == ptx::Type::bf16 ? double{std::bit_cast<float>(std::uint32_t{h} << 16)}
                                               : double{half_to_float(h)};
        };
        auto const value = [&](std::uint64_t address) {
            if (address + bytes > shared_memory_.size())
                fail(index, "wgmma operand element at shared address " + std::to_string(address) +
                                ", outside the block's " + std::to_string(shared_memory_.size()) +
                                " bytes of shared memory");
            if (tf32) {
                std::uint32_t w = 0;
                std::memcpy(&w, shared_memory_.data() + address, 4);
                return double{std::bit_cast<float>(w & ~0x1fffu)};
            }
            std::uint16_t h = 0;
            std::memcpy(&h, shared_memory_.data() + address, 2);
            return element(h);
        };
        Descriptor const b_desc = descriptor(mma.b_descriptor);
        bool const b_mn = !tf32 && imm(d.a_registers ? 6 : 7) == 1;
        auto const a_scale = static_cast<double>(imm(4)), b_scale = static_cast<double>(imm(5));
        std::vector<double> a(64 * K), b(K * static_cast<std::size_t>(n));
        if (d.a_registers) {
            // Thread t's register r holds A[16(t / 32) + (t % 32) / 4 + 8(r % 2)][8(r / 2) + 2(t % 4) + {0, 1}].
            for (unsigned t = 0; t < 128; ++t)
                for (unsigned r = 0; r < 4; ++r)
                    for (unsigned e = 0; e < 2; ++e) {
                        unsigned const row = 16 * (t / 32) + (t % 32) / 4 + 8 * (r % 2),
                                       k = 8 * (r / 2) + 2 * (t % 4) + e;
                        a[row * 16 + k] =
                            a_scale * element(static_cast<std::uint16_t>(mma.a_fragments[t][r] >> (16 * e)));
                    }
        } else {
            Descriptor const a_desc = descriptor(mma.a_descriptor);
            bool const a_mn = !tf32 && imm(6) == 1;
            for (unsigned m = 0; m < 64; ++m)
                for (unsigned k = 0; k < K; ++k)
                    a[m * K + k] = a_scale * value(operand_address(a_desc, a_mn, m, k, bytes));
        }
        for (unsigned k = 0; k < K; ++k)
            for (unsigned c = 0; c < n; ++c) b[k * n + c] = b_scale * value(operand_address(b_desc, b_mn, c, k, bytes));
        auto const& accumulators = std::get<ptx::VectorUse>(ops[0]).elements;
        for (unsigned t = 0; t < 128; ++t) {
            unsigned const w = t / 32, l = t % 32;
            for (unsigned j = 0; j < n / 8; ++j)
                for (unsigned h = 0; h < 2; ++h)
                    for (unsigned e = 0; e < 2; ++e) {
                        unsigned const row = 16 * w + l / 4 + 8 * h, col = 8 * j + 2 * (l % 4) + e;
                        std::uint64_t& r = wg.in_flight.at(accumulators[4 * j + 2 * h + e].reg.id())[t];
                        double sum = mma.accumulate ? double{f32(r)} : 0.0;
                        for (unsigned k = 0; k < K; ++k) sum += a[row * K + k] * b[k * n + col];
                        r = bits(static_cast<float>(sum));
                    }
        }
    }

    // ---- tensor copies (TMA)

    // The valid tensor map at a generic address: a tensor map parameter's bytes.
    ptx::TensorMapSpec tensor_map_at(std::size_t index, std::uint64_t address) const {
        for (auto const& [name, map] : tensor_maps_)
            if (reinterpret_cast<std::uintptr_t>(map.get()) == address) {
                ptx::TensorMapSpec const spec = decode_tensor_map(*map);
                if (std::string const problem = tensor_map_problem(spec); !problem.empty())
                    fail(index, "tensor map " + name + " is not a valid map: " + problem);
                return spec;
            }
        fail(index, "address " + std::to_string(address) + " is not a tensor map parameter's");
    }
    static std::size_t box_bytes(ptx::TensorMapSpec const& s) {
        std::size_t bytes = static_cast<std::size_t>(ptx::bytes_of(s.element));
        for (unsigned i = 0; i < s.rank; ++i) bytes *= s.box[i];
        return bytes;
    }
    // The box a tensor copy names, its shared side checked: 128-byte aligned (1024 with the
    // 128-byte swizzle, whose rows must then be 128 bytes), inside the block's shared memory.
    TensorBox tensor_box(std::size_t index, Thread const& t, ptx::TensorAddressUse const& use,
                         std::uint64_t shared_address) {
        TensorBox box{index, tensor_map_at(index, t.regs[use.map.reg.id()]), {}, shared_address};
        ptx::TensorMapSpec const& s = box.spec;
        if (use.coordinates.size() != s.rank)
            fail(index, "a " + std::to_string(use.coordinates.size()) + "-d copy with a map of rank " +
                            std::to_string(s.rank));
        for (std::size_t i = 0; i < use.coordinates.size(); ++i)
            box.coordinates[i] = signed_value(ptx::Type::s32, t.regs[use.coordinates[i].reg.id()]);
        std::size_t const row = std::size_t{s.box[0]} * static_cast<std::size_t>(ptx::bytes_of(s.element));
        if (s.swizzle == ptx::TensorMapSwizzle::swizzle_128b) {
            if (row != 128)
                fail(index, "a 128-byte swizzled box with rows of " + std::to_string(row) + " bytes not simulated");
            if (shared_address % 1024 != 0)
                fail(index, "shared address of a 128-byte swizzled box not 1024-byte aligned");
        } else if (s.swizzle != ptx::TensorMapSwizzle::none) {
            fail(index, "tensor copies with the 32- or 64-byte swizzle not simulated");
        } else if (shared_address % 128 != 0) {
            fail(index, "shared address of a tensor copy not 128-byte aligned");
        }
        (void)shared(index, shared_address, box_bytes(s), 1);
        return box;
    }
    // f(offset in shared memory from the box's start, global address, inside the tensor) for each
    // element of the box: element (j0, j1, ...) at offset (j0 + box0·(j1 + box1·(...)))·size, swizzled
    // (bits 4-6 XOR bits 7-9) with the 128-byte swizzle; at global address + Σ (c_i + j_i)·stride_i
    // (stride_0: the element size) when 0 ≤ c_i + j_i < dims_i for every i.
    template <class F>
    static void for_each_box_element(TensorBox const& b, F&& f) {
        ptx::TensorMapSpec const& s = b.spec;
        auto const size = static_cast<std::uint64_t>(ptx::bytes_of(s.element));
        std::uint64_t rows = 1;
        for (unsigned i = 1; i < s.rank; ++i) rows *= s.box[i];
        for (std::uint64_t r = 0; r < rows; ++r) {
            bool row_inside = true;
            std::uint64_t base = s.address, rest = r;
            for (unsigned i = 1; i < s.rank; ++i) {
                std::int64_t const c = b.coordinates[i] + static_cast<std::int64_t>(rest % s.box[i]);
                rest /= s.box[i];
                if (c < 0 || static_cast<std::uint64_t>(c) >= s.dims[i])
                    row_inside = false;
                else
                    base += static_cast<std::uint64_t>(c) * s.strides[i];
            }
            for (std::uint64_t j = 0; j < s.box[0]; ++j) {
                std::int64_t const c = b.coordinates[0] + static_cast<std::int64_t>(j);
                bool const inside = row_inside && c >= 0 && static_cast<std::uint64_t>(c) < s.dims[0];
                std::uint64_t o = (r * s.box[0] + j) * size;
                if (s.swizzle == ptx::TensorMapSwizzle::swizzle_128b) o ^= ((o >> 7) & 7) << 4;
                f(o, inside ? base + static_cast<std::uint64_t>(c) * size : 0, inside);
            }
        }
    }
    // A TMA load lands: the box's elements, zeros outside the tensor.
    void land_tensor_box(TensorBox const& b) {
        auto const size = static_cast<std::size_t>(ptx::bytes_of(b.spec.element));
        auto* to = static_cast<std::uint8_t*>(shared(b.index, b.shared_address, box_bytes(b.spec), 1));
        for_each_box_element(b, [&](std::uint64_t o, std::uint64_t from, bool inside) {
            if (inside)
                std::memcpy(to + o, global(b.index, from, size), size);
            else
                std::memset(to + o, 0, size);
        });
    }
    // A TMA store is done: the box's elements inside the tensor written.
    void store_tensor_box(TensorBox const& b) {
        auto const size = static_cast<std::size_t>(ptx::bytes_of(b.spec.element));
        auto const* from = static_cast<std::uint8_t const*>(shared(b.index, b.shared_address, box_bytes(b.spec), 1));
        for_each_box_element(b, [&](std::uint64_t o, std::uint64_t to, bool inside) {
            if (inside) std::memcpy(global(b.index, to, size), from + o, size);
        });
    }
    // A thread exits: its TMA stores still pending are done.
    void finish(Thread& t) {
        for (auto const& group : t.committed_stores)
            for (TensorBox const& b : group) store_tensor_box(b);
        for (TensorBox const& b : t.open_stores) store_tensor_box(b);
        t.committed_stores.clear();
        t.open_stores.clear();
        t.state = Thread::State::done;
    }

    // shfl.sync, ldmatrix and mma.sync (warp-collective): done once every lane of the warp is at
    // the same one.
    bool release_shuffle(std::vector<Thread>& threads, unsigned first, unsigned last) {
        std::size_t pc = 0;
        bool any = false;
        for (unsigned i = first; i < last; ++i) {
            if (threads[i].state != Thread::State::shuffle) return false;
            if (any && threads[i].pc != pc)
                throw SimulationError(kernel_.name() + ": lanes of a warp at different shfl.sync");
            pc = threads[i].pc, any = true;
        }
        if (!any) return false;
        Op const op = code_[pc].op;
        if (op == Op::ldmatrix || op == Op::mma) {
            if (last - first != 32)
                throw SimulationError(kernel_.name() + ": a warp-collective matrix instruction in a partial warp");
            if (op == Op::ldmatrix)
                load_matrices(threads, first);
            else
                multiply_matrices(threads, first);
            for (unsigned i = first; i < last; ++i) threads[i].state = Thread::State::running, ++threads[i].pc;
            return true;
        }
        shuffle(threads, first, last);
        return true;
    }

    // ldmatrix.m8n8.x{1,2,4}.b16: lane 8·m + r names row r of matrix m (16 bytes in shared memory);
    // register m of lane l receives that matrix's elements (l / 4, 2·(l % 4) + {0, 1}), or with
    // .trans its elements (2·(l % 4) + {0, 1}, l / 4); the first element in the low half.
    void load_matrices(std::vector<Thread>& threads, unsigned first) {
        std::size_t const index = threads[first].pc;
        Decoded const& d = code_[index];
        auto const& ops = d.in->operands;
        auto const& regs = std::get<ptx::VectorUse>(ops[0]).elements;
        auto const element = [&](int m, unsigned row, unsigned col) {
            Thread const& source = threads[first + static_cast<unsigned>(m) * 8 + row];
            std::uint64_t const at = address_of(source, std::get<ptx::AddressUse>(ops[1]).address);
            std::uint16_t v = 0;
            std::memcpy(&v, static_cast<std::uint8_t*>(shared(index, at, 16)) + col * 2, 2);
            return std::uint64_t{v};
        };
        for (unsigned l = 0; l < 32; ++l)
            for (int m = 0; m < d.vector; ++m) {
                unsigned const r = l / 4, c = 2 * (l % 4);
                std::uint64_t const lo = d.transpose ? element(m, c, r) : element(m, r, c);
                std::uint64_t const hi = d.transpose ? element(m, c + 1, r) : element(m, r, c + 1);
                write(threads[first + l], regs[static_cast<std::size_t>(m)], lo | (hi << 16));
            }
    }

    // mma.sync.m16n8k16.row.col, f16 / bf16 products summed in double with c and rounded to f32
    // once (the hardware's sum is at least as exact as f32 per step). Lane l, g = l / 4, t = l % 4:
    // a = {(g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8)} pairs along k; b = {(2t, g),
    // (2t + 8, g)} pairs along k; c, d = (g, 2t + {0, 1}), (g + 8, 2t + {0, 1}).
    void multiply_matrices(std::vector<Thread>& threads, unsigned first) {
        Decoded const& d = code_[threads[first].pc];
        auto const& ops = d.in->operands;
        auto const value = [&](std::uint64_t bits16) {
            auto const h = static_cast<std::uint16_t>(bits16);
            return d.source == ptx::Type::bf16 ? double{std::bit_cast<float>(std::uint32_t{h} << 16)}
                                               : double{half_to_float(h)};
        };
        double a[16][16], b[16][8], c[16][8];
        for (unsigned l = 0; l < 32; ++l) {
            Thread const& t = threads[first + l];
            unsigned const g = l / 4, q = 2 * (l % 4);
            auto const reg = [&](std::size_t operand, std::size_t e) {
                return t.regs[std::get<ptx::VectorUse>(ops[operand]).elements[e].reg.id()];
            };
            for (unsigned e = 0; e < 4; ++e) {
                unsigned const row = g + (e % 2) * 8, col = q + (e / 2) * 8;
                a[row][col] = value(reg(1, e));
                a[row][col + 1] = value(reg(1, e) >> 16);
                c[g + (e / 2) * 8][q + e % 2] = f32(reg(3, e));
            }
            for (unsigned e = 0; e < 2; ++e) {
                b[q + e * 8][g] = value(reg(2, e));
                b[q + e * 8 + 1][g] = value(reg(2, e) >> 16);
            }
        }
        for (unsigned l = 0; l < 32; ++l) {
            unsigned const g = l / 4, q = 2 * (l % 4);
            for (unsigned e = 0; e < 4; ++e) {
                unsigned const row = g + (e / 2) * 8, col = q + e % 2;
                double sum = c[row][col];
                for (unsigned k = 0; k < 16; ++k) sum += a[row][k] * b[k][col];
                write(threads[first + l], std::get<ptx::VectorUse>(ops[0]).elements[e], bits(static_cast<float>(sum)));
            }
        }
    }

    void shuffle(std::vector<Thread>& threads, unsigned first, unsigned last) {
        Decoded const& d = code_[threads[first].pc];
        auto const& ops = d.in->operands;
        std::vector<std::uint64_t> values(32, 0);
        for (unsigned i = first; i < last; ++i) values[i - first] = read(threads[i], ops[1], ptx::Type::b32);
        for (unsigned i = first; i < last; ++i) {
            Thread& t = threads[i];
            unsigned const lane = i - first;
            auto const b = static_cast<unsigned>(read(t, ops[2], ptx::Type::u32));
            long source = lane;
            if (d.shuffle == "bfly")
                source = lane ^ b;
            else if (d.shuffle == "down")
                source = lane + b;
            else if (d.shuffle == "up")
                source = static_cast<long>(lane) - static_cast<long>(b);
            else
                source = b & 31;
            if (source < 0 || source > 31 || static_cast<unsigned>(source) + first >= last) source = lane;
            write(t, std::get<ptx::RegUse>(ops[0]), values[static_cast<std::size_t>(source)]);
            t.state = Thread::State::running;
            ++t.pc;
        }
    }

    void write(Thread& t, ptx::RegUse const& r, std::uint64_t v) { t.regs[r.reg.id()] = mask(r.expected, v); }

    void step_until_blocked(Thread& t) {
        auto const& body = kernel_.instructions();
        while (t.state == Thread::State::running) {
            if (t.pc >= code_.size()) {
                finish(t);
                return;
            }
            std::size_t const index = t.pc;
            Decoded const& d = code_[index];
            if (d.op == Op::label || d.op == Op::comment) {
                ++t.pc;
                continue;
            }
            ++executed_;
            if (d.op != Op::mbarrier_try_wait) progress_ = true;  // a wait counts once it returns
            ptx::Instruction const& in = body[index];
            if (in.guard) {
                bool const p = t.regs[in.guard->predicate.id()] & 1;
                if (p != in.guard->when) {
                    ++t.pc;
                    continue;
                }
            }
            execute(t, index, d, in);
        }
    }

    void execute(Thread& t, std::size_t index, Decoded const& d, ptx::Instruction const& in) {
        using ptx::Type;
        auto const& ops = in.operands;
        Type const type = d.type;
        auto dst = [&]() -> ptx::RegUse const& { return std::get<ptx::RegUse>(ops[0]); };
        auto src = [&](std::size_t i, Type ty) { return read(t, ops[i], ty); };
        bool const is_f32 = type == Type::f32, is_f64 = type == Type::f64;
        bool const is_signed = ptx::kind_of(type) == ptx::TypeKind::signed_int;
        int const width = ptx::bits_of(type);
        switch (d.op) {
            case Op::bra: t.pc = d.target; return;
            case Op::ret: finish(t); return;
            case Op::bar: t.state = Thread::State::barrier; return;
            case Op::shfl:
            case Op::ldmatrix:
            case Op::mma: t.state = Thread::State::shuffle; return;
            case Op::ld:
            case Op::st: memory(t, index, d, in); break;
            case Op::prefetch: break;
            case Op::griddepcontrol: break;
            case Op::fence: break;
            case Op::warp_bar: t.state = Thread::State::warp_barrier; return;
            case Op::named_bar: arrive_at_named_barrier(t, index, d); return;
            case Op::mbarrier_init: {
                std::uint64_t const at = address_of(t, std::get<ptx::AddressUse>(ops[0]).address);
                if (at % 8 != 0) fail(index, "misaligned mbarrier");
                (void)shared(index, at, 8);
                auto const arrivals = static_cast<unsigned>(src(1, Type::u32));
                mbarriers_[at] =
                    Mbarrier{.expected = arrivals, .pending = arrivals, .tx = 0, .completed = 0, .copies = {}};
                break;
            }
            case Op::mbarrier_arrive: {
                Mbarrier& mb = mbarrier(index, address_of(t, std::get<ptx::AddressUse>(ops[1]).address));
                if (d.expect_tx) mb.tx += static_cast<std::int64_t>(src(2, Type::u32));
                if (mb.pending == 0) fail(index, "mbarrier arrival beyond its expected count");
                --mb.pending;
                complete_phase(mb);
                write(t, dst(), mb.completed);
                break;
            }
            case Op::mbarrier_try_wait: {
                Mbarrier& mb = mbarrier(index, address_of(t, std::get<ptx::AddressUse>(ops[1]).address));
                if (mb.pending == 0) {  // every arrival in: the announced copies land now
                    for (BulkCopy const& c : mb.copies) {
                        if (c.tensor)
                            land_tensor_box(*c.tensor);
                        else
                            std::memcpy(shared(index, c.shared_address, c.bytes, 16),
                                        reinterpret_cast<void const*>(c.global_address), c.bytes);
                        mb.tx -= static_cast<std::int64_t>(c.bytes);
                    }
                    mb.copies.clear();
                    if (mb.tx < 0) fail(index, "more bytes landed on an mbarrier than were announced");
                    complete_phase(mb);
                }
                if ((mb.completed & 1) == (src(2, Type::u32) & 1)) {  // the phase of that parity is not done
                    t.state = Thread::State::waiting;
                    return;
                }
                progress_ = true;
                write(t, dst(), 1);
                break;
            }
            case Op::bulk_copy: {
                std::uint64_t const to = address_of(t, std::get<ptx::AddressUse>(ops[0]).address);
                std::uint64_t const from = address_of(t, std::get<ptx::AddressUse>(ops[1]).address);
                auto const bytes = static_cast<std::size_t>(src(2, Type::u32));
                if (to % 16 != 0 || from % 16 != 0 || bytes % 16 != 0 || bytes == 0)
                    fail(index, "misaligned or empty bulk copy");
                // The bytes may land at any time from now on: poisoned now (a thread still reading
                // what the slot held before sees it), landed at the first wait that may see them.
                std::memset(shared(index, to, bytes, 16), 0xCD, bytes);
                if (!in_buffers(from, bytes))
                    fail(index, "bulk copy from outside the allowed buffers at " + std::to_string(from));
                mbarrier(index, address_of(t, std::get<ptx::AddressUse>(ops[3]).address))
                    .copies.push_back({to, from, bytes, std::nullopt});
                break;
            }
            case Op::prefetch_tensormap:
                (void)tensor_map_at(index, address_of(t, std::get<ptx::AddressUse>(ops[0]).address));
                break;
            case Op::tensor_load: {
                if (d.multicast)
                    fail(index, "multicast to the blocks of a cluster (.multicast::cluster) not simulated");
                std::uint64_t const to = address_of(t, std::get<ptx::AddressUse>(ops[0]).address);
                TensorBox box = tensor_box(index, t, std::get<ptx::TensorAddressUse>(ops[1]), to);
                auto const size = static_cast<std::size_t>(ptx::bytes_of(box.spec.element));
                for_each_box_element(box, [&](std::uint64_t, std::uint64_t from, bool inside) {
                    if (inside && !in_buffers(from, size))
                        fail(index, "tensor load from outside the allowed buffers at " + std::to_string(from));
                });
                // Poisoned now, landed at the first wait that may see it (as a bulk copy).
                std::size_t const bytes = box_bytes(box.spec);
                std::memset(shared(index, to, bytes, 1), 0xCD, bytes);
                mbarrier(index, address_of(t, std::get<ptx::AddressUse>(ops[2]).address))
                    .copies.push_back({to, 0, bytes, std::move(box)});
                break;
            }
            case Op::tensor_store: {
                std::uint64_t const from = address_of(t, std::get<ptx::AddressUse>(ops[1]).address);
                t.open_stores.push_back(tensor_box(index, t, std::get<ptx::TensorAddressUse>(ops[0]), from));
                break;
            }
            case Op::bulk_commit:
                t.committed_stores.push_back(std::move(t.open_stores));
                t.open_stores.clear();
                break;
            case Op::bulk_wait: {  // .read or not: the stores are done, source read and destination written
                auto const pending = static_cast<std::size_t>(read(t, ops[0], Type::u32));
                while (t.committed_stores.size() > pending) {
                    for (TensorBox const& b : t.committed_stores.front()) store_tensor_box(b);
                    t.committed_stores.pop_front();
                }
                break;
            }
            case Op::setmaxnreg:
            case Op::wgmma_fence: break;  // the register budget; MMAs are ordered here anyway
            case Op::wgmma:
            case Op::wgmma_commit:
            case Op::wgmma_wait: t.state = Thread::State::warpgroup; return;
            case Op::cluster:
                fail(index, "thread-block cluster instructions (barrier.cluster, mapa, remote mbarrier) not simulated");
            case Op::bulk_prefetch: {  // no effect, but the bytes must lie in one buffer (and be 16-byte aligned)
                std::uint64_t const address = address_of(t, std::get<ptx::AddressUse>(ops[0]).address);
                auto const bytes = static_cast<std::size_t>(read(t, ops[1], Type::u32));
                if (address % 16 != 0 || bytes % 16 != 0 || bytes == 0)
                    fail(index, "misaligned or empty bulk prefetch");
                if (!in_buffers(address, bytes))
                    fail(index, "bulk prefetch of " + std::to_string(bytes) + " bytes outside the allowed buffers at " +
                                    std::to_string(address));
                break;
            }
            case Op::cp_async: {
                auto const& to = std::get<ptx::AddressUse>(ops[0]).address;
                auto const& from = std::get<ptx::AddressUse>(ops[1]).address;
                auto const bytes = static_cast<std::size_t>(read(t, ops[2], Type::u32));
                std::size_t const source =
                    ops.size() > 3 ? static_cast<std::size_t>(read(t, ops[3], Type::u32)) : bytes;
                if (source > bytes) fail(index, "cp.async source size beyond the copy");
                std::uint64_t const shared_address = address_of(t, to), global_address = address_of(t, from);
                (void)shared(index, shared_address, bytes);  // checked now: the copy lands later
                if (source > 0) {
                    if (global_address % bytes != 0) fail(index, "misaligned cp.async source");
                    (void)global(index, global_address, source);
                }
                t.open_group.push_back({shared_address, global_address, bytes, source});
                break;
            }
            case Op::cp_commit:
                t.committed.push_back(std::move(t.open_group));
                t.open_group.clear();
                break;
            case Op::cp_wait: {
                auto const pending = static_cast<std::size_t>(read(t, ops[0], Type::u32));
                while (t.committed.size() > pending) {
                    for (PendingCopy const& c : t.committed.front()) {
                        auto* p = static_cast<std::uint8_t*>(shared(index, c.shared_address, c.bytes));
                        std::memset(p, 0, c.bytes);
                        if (c.source_bytes > 0)
                            std::memcpy(p, reinterpret_cast<void const*>(c.global_address), c.source_bytes);
                    }
                    t.committed.pop_front();
                }
                break;
            }
            case Op::dp4a:
            case Op::dp2a: {
                std::uint64_t const a = src(1, Type::u32), b = src(2, Type::u32);
                std::int64_t sum = signed_value(Type::s32, src(3, Type::s32));
                auto part = [](std::uint64_t word, int bits, int i, bool is_signed) -> std::int64_t {
                    std::uint64_t const v = (word >> (bits * i)) & ((std::uint64_t{1} << bits) - 1);
                    std::uint64_t const sign = std::uint64_t{1} << (bits - 1);
                    return is_signed ? static_cast<std::int64_t>(v ^ sign) - static_cast<std::int64_t>(sign)
                                     : static_cast<std::int64_t>(v);
                };
                if (d.op == Op::dp4a)
                    for (int i = 0; i < 4; ++i) sum += part(a, 8, i, d.a_signed) * part(b, 8, i, d.b_signed);
                else
                    for (int i = 0; i < 2; ++i)
                        sum += part(a, 16, i, d.a_signed) * part(b, 8, i + (d.dp2a_high ? 2 : 0), d.b_signed);
                write(t, dst(), mask(Type::s32, static_cast<std::uint64_t>(sum)));
                break;
            }
            case Op::prmt: {
                std::uint64_t const bytes8 = src(1, Type::b32) | (src(2, Type::b32) << 32);
                std::uint64_t const selector = src(3, Type::b32);
                std::uint64_t r = 0;
                for (int i = 0; i < 4; ++i) {
                    std::uint64_t const nibble = (selector >> (4 * i)) & 0xf;
                    std::uint64_t const byte = (bytes8 >> (8 * (nibble & 7))) & 0xff;
                    // A selector's msb replicates the selected byte's sign bit over the byte.
                    r |= ((nibble & 8) ? ((byte & 0x80) ? 0xff : 0) : byte) << (8 * i);
                }
                write(t, dst(), r);
                break;
            }
            case Op::bfe: {
                std::uint64_t const a = src(1, type);
                auto const start = static_cast<unsigned>(src(2, Type::u32) & 0xff);
                auto const length = static_cast<unsigned>(src(3, Type::u32) & 0xff);
                if (length == 0 || start >= static_cast<unsigned>(width)) {
                    write(t, dst(), 0);
                    break;
                }
                unsigned const len = std::min(length, static_cast<unsigned>(width) - start);
                std::uint64_t v = (a >> start) & ((std::uint64_t{1} << len) - 1);
                if (is_signed && ((v >> (len - 1)) & 1)) v |= ~((std::uint64_t{1} << len) - 1);
                write(t, dst(), mask(type, v));
                break;
            }
            case Op::mov: {
                // mov.b64 / mov.b32 {lo, hi}, r (unpack) and mov r, {lo, hi} (pack), halves of the width.
                int const half = width / 2;
                std::uint64_t const half_mask = (std::uint64_t{1} << half) - 1;
                if (auto const* v = std::get_if<ptx::VectorUse>(&ops[0])) {
                    std::uint64_t const x = src(1, type);
                    t.regs[v->elements[0].reg.id()] = x & half_mask;
                    t.regs[v->elements[1].reg.id()] = (x >> half) & half_mask;
                } else if (auto const* v1 = std::get_if<ptx::VectorUse>(&ops[1])) {
                    std::uint64_t const lo = t.regs[v1->elements[0].reg.id()] & half_mask;
                    std::uint64_t const hi = t.regs[v1->elements[1].reg.id()] & half_mask;
                    write(t, dst(), lo | (hi << half));
                } else {
                    write(t, dst(), src(1, type));
                }
                break;
            }
            case Op::cvta: write(t, dst(), src(1, type)); break;
            case Op::add:
            case Op::sub:
            case Op::mul:
            case Op::div:
            case Op::rem:
            case Op::min:
            case Op::max: {
                std::uint64_t const a = src(1, type), b = src(2, type);
                if (is_f32)
                    write(t, dst(), bits(float_op(d, f32(a), f32(b))));
                else if (is_f64)
                    write(t, dst(), bits(float_op(d, f64(a), f64(b))));
                else if (d.op == Op::mul && d.wide) {
                    Type const wide = ptx::bits_of(type) == 32 ? (is_signed ? Type::s64 : Type::u64) : type;
                    std::uint64_t const r =
                        is_signed ? static_cast<std::uint64_t>(signed_value(type, a) * signed_value(type, b)) : a * b;
                    t.regs[dst().reg.id()] = mask(wide, r);
                } else
                    write(t, dst(), integer_op(index, d, type, a, b));
                break;
            }
            case Op::mad: {
                std::uint64_t const r = src(1, type) * src(2, type) + src(3, type);
                write(t, dst(), mask(type, r));
                break;
            }
            case Op::fma: {
                std::uint64_t const a = src(1, type), b = src(2, type), c = src(3, type);
                if (is_f32)
                    write(t, dst(), bits(std::fma(f32(a), f32(b), f32(c))));
                else
                    write(t, dst(), bits(std::fma(f64(a), f64(b), f64(c))));
                break;
            }
            case Op::neg: {
                std::uint64_t const a = src(1, type);
                if (is_f32)
                    write(t, dst(), bits(-f32(a)));
                else if (is_f64)
                    write(t, dst(), bits(-f64(a)));
                else
                    write(t, dst(), mask(type, static_cast<std::uint64_t>(-signed_value(type, a))));
                break;
            }
            case Op::abs: {
                std::uint64_t const a = src(1, type);
                if (is_f32)
                    write(t, dst(), bits(std::fabs(f32(a))));
                else if (is_f64)
                    write(t, dst(), bits(std::fabs(f64(a))));
                else
                    write(t, dst(), mask(type, static_cast<std::uint64_t>(std::llabs(signed_value(type, a)))));
                break;
            }
            case Op::and_: write(t, dst(), src(1, type) & src(2, type)); break;
            case Op::or_: write(t, dst(), src(1, type) | src(2, type)); break;
            case Op::xor_: write(t, dst(), src(1, type) ^ src(2, type)); break;
            case Op::not_: write(t, dst(), mask(type, ~src(1, type))); break;
            case Op::shl: {
                std::uint64_t const n = src(2, Type::u32);
                write(t, dst(), n >= static_cast<std::uint64_t>(width) ? 0 : mask(type, src(1, type) << n));
                break;
            }
            case Op::shr: {
                std::uint64_t const n = std::min<std::uint64_t>(src(2, Type::u32), static_cast<std::uint64_t>(width));
                std::uint64_t const a = src(1, type);
                if (is_signed) {
                    std::int64_t const v = signed_value(type, a);
                    write(t, dst(), mask(type, static_cast<std::uint64_t>(n >= 64 ? (v < 0 ? -1 : 0) : v >> n)));
                } else {
                    write(t, dst(), n >= 64 ? 0 : a >> n);
                }
                break;
            }
            case Op::setp: {
                bool p = compare(index, d.cmp, type, src(1, type), src(2, type));
                if (d.combine_and) p = p && (src(3, Type::pred) & 1);
                write(t, dst(), p);
                break;
            }
            case Op::selp: write(t, dst(), (src(3, Type::pred) & 1) ? src(1, type) : src(2, type)); break;
            case Op::cvt: write(t, dst(), convert(index, d, src(1, d.source))); break;
            case Op::sqrt: {
                std::uint64_t const a = src(1, type);
                if (is_f32)
                    write(t, dst(), bits(std::sqrt(f32(a))));
                else
                    write(t, dst(), bits(std::sqrt(f64(a))));
                break;
            }
            case Op::rcp: {
                std::uint64_t const a = src(1, type);
                if (is_f32)
                    write(t, dst(), bits(1.0f / f32(a)));
                else
                    write(t, dst(), bits(1.0 / f64(a)));
                break;
            }
            case Op::ex2: {
                if (!is_f32) fail(index, "ex2 other than .f32 not simulated");
                float r = static_cast<float>(std::exp2(static_cast<double>(f32(src(1, type)))));
                if (std::fabs(r) < std::numeric_limits<float>::min()) r = 0.0f;
                write(t, dst(), bits(r));
                break;
            }
            default: fail(index, "not simulated");
        }
        ++t.pc;
    }

    template <class F>
    static F float_op(Decoded const& d, F a, F b) {
        switch (d.op) {
            case Op::add: return a + b;
            case Op::sub: return a - b;
            case Op::mul: return a * b;
            case Op::div: return a / b;
            case Op::min:
            case Op::max: {
                bool const is_max = d.op == Op::max;
                if (std::isnan(a) || std::isnan(b)) {
                    if (d.nan) return std::numeric_limits<F>::quiet_NaN();
                    return std::isnan(a) ? b : a;
                }
                if (a == b) return is_max ? (std::signbit(a) ? b : a) : (std::signbit(a) ? a : b);  // -0 < +0
                return is_max ? std::max(a, b) : std::min(a, b);
            }
            default: return std::numeric_limits<F>::quiet_NaN();
        }
    }

    std::uint64_t integer_op(std::size_t index, Decoded const& d, ptx::Type type, std::uint64_t a,
                             std::uint64_t b) const {
        bool const is_signed = ptx::kind_of(type) == ptx::TypeKind::signed_int;
        std::int64_t const sa = signed_value(type, a), sb = signed_value(type, b);
        switch (d.op) {
            case Op::add: return mask(type, a + b);
            case Op::sub: return mask(type, a - b);
            case Op::mul:
                if (d.high) fail(index, "mul.hi not simulated");
                return mask(type, a * b);
            case Op::div:
                if (b == 0) fail(index, "integer division by zero");
                return mask(type, is_signed ? static_cast<std::uint64_t>(sa / sb) : a / b);
            case Op::rem:
                if (b == 0) fail(index, "integer division by zero");
                return mask(type, is_signed ? static_cast<std::uint64_t>(sa % sb) : a % b);
            case Op::min: return is_signed ? mask(type, static_cast<std::uint64_t>(std::min(sa, sb))) : std::min(a, b);
            case Op::max: return is_signed ? mask(type, static_cast<std::uint64_t>(std::max(sa, sb))) : std::max(a, b);
            default: fail(index, "not an integer operation");
        }
    }

    bool compare(std::size_t index, std::string const& cmp, ptx::Type type, std::uint64_t a, std::uint64_t b) const {
        if (ptx::is_float(type)) {
            double const x = type == ptx::Type::f32 ? f32(a) : f64(a), y = type == ptx::Type::f32 ? f32(b) : f64(b);
            bool const unordered = std::isnan(x) || std::isnan(y);
            if (cmp == "eq") return !unordered && x == y;
            if (cmp == "ne") return !unordered && x != y;
            if (cmp == "lt") return !unordered && x < y;
            if (cmp == "le") return !unordered && x <= y;
            if (cmp == "gt") return !unordered && x > y;
            if (cmp == "ge") return !unordered && x >= y;
            if (cmp == "equ") return unordered || x == y;
            if (cmp == "neu") return unordered || x != y;
            if (cmp == "ltu") return unordered || x < y;
            if (cmp == "leu") return unordered || x <= y;
            if (cmp == "gtu") return unordered || x > y;
            if (cmp == "geu") return unordered || x >= y;
            if (cmp == "nan") return unordered;
            if (cmp == "num") return !unordered;
            fail(index, "comparison " + cmp + " not simulated");
        }
        bool const is_signed = ptx::kind_of(type) == ptx::TypeKind::signed_int;
        auto ord = [&](auto x, auto y) -> bool {
            if (cmp == "eq") return x == y;
            if (cmp == "ne") return x != y;
            if (cmp == "lt" || cmp == "lo") return x < y;
            if (cmp == "le" || cmp == "ls") return x <= y;
            if (cmp == "gt" || cmp == "hi") return x > y;
            if (cmp == "ge" || cmp == "hs") return x >= y;
            fail(index, "comparison " + cmp + " not simulated");
        };
        return is_signed ? ord(signed_value(type, a), signed_value(type, b)) : ord(a, b);
    }

    std::uint64_t convert(std::size_t index, Decoded const& d, std::uint64_t v) const {
        using ptx::Type;
        Type const to = d.type, from = d.source;
        if (ptx::is_float(to) && ptx::is_float(from)) {
            if (to == Type::f64 && from == Type::f32) return bits(static_cast<double>(f32(v)));
            if (to == Type::f32 && from == Type::f64) return bits(static_cast<float>(f64(v)));  // round to nearest
            if (to == Type::f32 && from == Type::f16) return bits(half_to_float(static_cast<std::uint16_t>(v)));
            // To the 16-bit types, round to nearest even as rayo::half / rayo::bfloat16 do.
            if (to == Type::f16 && from == Type::f32 && d.rounding == ptx::Rounding::rn)
                return rayo::detail::float_to_half_bits(f32(v));
            if (to == Type::bf16 && from == Type::f32 && d.rounding == ptx::Rounding::rn)
                return rayo::detail::float_to_bfloat16_bits(f32(v));
            if (to == from) return v;
            fail(index, "float conversion not simulated");
        }
        if (ptx::is_float(to)) {
            bool const s = ptx::kind_of(from) == ptx::TypeKind::signed_int;
            // The integer exactly (long double holds 64 bits), rounded as the modifier says.
            long double const exact = s ? static_cast<long double>(signed_value(from, v)) : static_cast<long double>(v);
            auto const rounded = [&]<class F>(F nearest) {
                long double const n = nearest;
                switch (d.rounding) {
                    case ptx::Rounding::rz:
                        if (std::abs(n) > std::abs(exact)) nearest = std::nextafter(nearest, F(0));
                        break;
                    case ptx::Rounding::rm:
                        if (n > exact) nearest = std::nextafter(nearest, -std::numeric_limits<F>::infinity());
                        break;
                    case ptx::Rounding::rp:
                        if (n < exact) nearest = std::nextafter(nearest, std::numeric_limits<F>::infinity());
                        break;
                    default: break;  // rn
                }
                return nearest;
            };
            if (to == Type::f32) return bits(rounded(static_cast<float>(exact)));
            return bits(rounded(static_cast<double>(exact)));
        }
        if (ptx::is_float(from)) {
            // Rounded as the modifier says, then saturated to the destination's range (NaN: 0).
            double x = from == Type::f32 ? f32(v) : from == Type::f64 ? f64(v) : fail_value(index, "cvt source");
            if (std::isnan(x)) return 0;
            switch (d.rounding) {
                case ptx::Rounding::rni: x = std::nearbyint(x); break;  // the host rounds to nearest even
                case ptx::Rounding::rzi: x = std::trunc(x); break;
                case ptx::Rounding::rmi: x = std::floor(x); break;
                case ptx::Rounding::rpi: x = std::ceil(x); break;
                default: fail(index, "float to integer conversion without an integer rounding");
            }
            int const b = ptx::bits_of(to);
            bool const s = ptx::kind_of(to) == ptx::TypeKind::signed_int;
            double const lo = s ? -std::ldexp(1.0, b - 1) : 0.0,
                         hi = s ? std::ldexp(1.0, b - 1) - 1 : std::ldexp(1.0, b) - 1;
            x = std::clamp(x, lo, hi);
            return mask(to,
                        s ? static_cast<std::uint64_t>(static_cast<std::int64_t>(x)) : static_cast<std::uint64_t>(x));
        }
        // Integer to integer: sign- or zero-extend from the source, truncate to the destination.
        bool const s = ptx::kind_of(from) == ptx::TypeKind::signed_int;
        std::uint64_t const x = s ? static_cast<std::uint64_t>(signed_value(from, v)) : mask(from, v);
        return mask(to, x);
    }

    void memory(Thread& t, std::size_t index, Decoded const& d, ptx::Instruction const& in) {
        auto const& ops = in.operands;
        std::size_t const bytes = static_cast<std::size_t>(ptx::bytes_of(d.type));
        if (d.op == Op::ld && d.param) {
            auto const& text = std::get<ptx::TextUse>(ops[1]).text;
            std::string const name = text.substr(1, text.size() - 2);
            if (tensor_maps_.count(name) != 0) fail(index, "ld.param of the tensor map " + name + " not simulated");
            write(t, std::get<ptx::RegUse>(ops[0]), mask(d.type, params_.at(name)));
            return;
        }
        std::size_t const address_operand = d.op == Op::ld ? 1 : 0;
        std::uint64_t const address = address_of(t, std::get<ptx::AddressUse>(ops[address_operand]).address);
        std::size_t const total = bytes * static_cast<std::size_t>(d.vector);
        auto* p = static_cast<std::uint8_t*>(d.shared ? shared(index, address, total) : global(index, address, total));
        ptx::RegUse const* regs[4] = {};
        std::size_t count = 0;
        if (auto const* v = std::get_if<ptx::VectorUse>(&ops[d.op == Op::ld ? 0 : 1])) {
            for (auto const& e : v->elements) regs[count++] = &e;
        } else if (auto const* r = std::get_if<ptx::RegUse>(&ops[d.op == Op::ld ? 0 : 1])) {
            regs[count++] = r;
        }
        if (d.op == Op::ld) {
            for (std::size_t e = 0; e < count; ++e) {
                std::uint64_t v = 0;
                std::memcpy(&v, p + e * bytes, bytes);
                if (ptx::kind_of(d.type) == ptx::TypeKind::signed_int)
                    v = static_cast<std::uint64_t>(signed_value(d.type, v));
                t.regs[regs[e]->reg.id()] = v;
            }
        } else if (count == 0) {
            std::uint64_t const v = read(t, ops[1], d.type);
            std::memcpy(p, &v, bytes);
        } else {
            for (std::size_t e = 0; e < count; ++e) {
                std::uint64_t const v = t.regs[regs[e]->reg.id()];
                std::memcpy(p + e * bytes, &v, bytes);
            }
        }
    }

    ptx::Kernel const& kernel_;
    std::vector<Decoded> code_;
    std::uint32_t register_count_ = 0;
    std::vector<ptx::Kernel::Parameter> parameters_;
    std::vector<ptx::Type> param_types_;
    std::map<std::string, std::uint64_t> params_;
    std::map<std::string, std::unique_ptr<ptx::TensorMap>> tensor_maps_;  // the launch's copies, by parameter
    std::array<unsigned long, 3> cluster_{1, 1, 1};                       // .reqnctapercluster
    std::vector<Warpgroup> warpgroups_;                                   // this block's
    std::map<std::string, std::uint64_t> symbols_;
    std::size_t shared_bytes_ = 0;  // static, and the dynamic array's offset
    std::size_t dynamic_shared_bytes_ = 0;
    std::vector<std::uint8_t> shared_memory_;
    std::map<std::uint64_t, Mbarrier> mbarriers_;  // this block's, by shared address
    struct NamedBarrier {
        unsigned threads = 0, arrived = 0;  // the phase's thread count, and the arrivals so far
    };
    std::array<NamedBarrier, 16> named_barriers_{};
    std::vector<Thread>* block_threads_ = nullptr;  // the block running
    bool progress_ = false;                         // some thread went on this round
    std::vector<Range> ranges_;
    Dim3 grid_, block_;
    unsigned block_index_[3]{};
    std::uint64_t executed_ = 0;
};

// A cuda::KernelRunner whose launches run in the simulator, synchronously, on host memory: views'
// buffers are host pointers (buffer + offset is the address). It checks that a cache key always
// names the same kernel text, and records the launches for the tests to inspect.
class SimulatedRunner final : public cuda::KernelRunner {
public:
    struct LaunchRecord {
        std::string key;
        cuda::LaunchDims dims;
    };

    explicit SimulatedRunner(int multiprocessors = 2, ptx::Target target = ptx::Target::sm_90)
        : multiprocessors_(multiprocessors), target_(target) {}

    [[nodiscard]] ptx::Target target() const noexcept override { return target_; }
    [[nodiscard]] int multiprocessor_count() const noexcept override { return multiprocessors_; }
    [[nodiscard]] unsigned max_shared_bytes() const noexcept override { return max_shared_bytes_; }
    // The dynamic shared memory the simulated device offers a block (e.g. an H100's 227 KiB).
    void set_max_shared_bytes(unsigned bytes) noexcept { max_shared_bytes_ = bytes; }
    [[nodiscard]] cuda::MultiprocessorSharedMemory multiprocessor_shared() const noexcept override {
        return multiprocessor_shared_;
    }
    // What the simulated device's multiprocessors have of shared memory (unknown by default).
    void set_multiprocessor_shared(cuda::MultiprocessorSharedMemory sm) noexcept { multiprocessor_shared_ = sm; }
    [[nodiscard]] std::uint64_t address(detail::TensorView const& view) override { return view.buffer + view.offset; }
    [[nodiscard]] std::uint64_t allocate_temporary(std::size_t bytes) override {
        auto block = std::make_unique<std::vector<std::uint8_t>>(bytes, 0xCD);  // poisoned
        auto const address = reinterpret_cast<std::uint64_t>(block->data());
        temporaries_[address] = std::move(block);
        return address;
    }
    void free_temporary(std::uint64_t address) noexcept override { temporaries_.erase(address); }

    void launch(std::string_view key_text, cuda::KernelFactory make, cuda::LaunchDims dims,
                std::span<void*> arguments) override {
        std::string const key(key_text);
        auto it = kernels_.find(key);
        if (it == kernels_.end()) {
            auto entry = std::make_unique<Entry>(make());
            entry->text = entry->kernel.emit(ptx::emission_target(entry->kernel, target_));
            entry->simulator = std::make_unique<Simulator>(entry->kernel);
            it = kernels_.emplace(key, std::move(entry)).first;
        } else if (ptx::Kernel const again = make();
                   again.emit(ptx::emission_target(again, target_)) != it->second->text) {
            throw SimulationError("cache key '" + key + "' names two different kernels");
        }
        if (dims.shared_bytes > max_shared_bytes_)
            throw SimulationError(key + ": " + std::to_string(dims.shared_bytes) +
                                  " bytes of shared memory, more than the " + std::to_string(max_shared_bytes_) +
                                  " a block may have");
        launches_.push_back({key, dims});
        Simulator& sim = *it->second->simulator;
        sim.forget_buffers();
        std::uint64_t const before = sim.executed();
        for (auto const& r : allowed_) sim.allow(reinterpret_cast<void const*>(r.first), r.second);
        for (auto const& [address, block] : temporaries_) sim.allow(block->data(), block->size());
        sim.run({dims.grid[0], dims.grid[1], dims.grid[2]}, {dims.block[0], dims.block[1], dims.block[2]}, arguments,
                dims.shared_bytes);
        executed_ += sim.executed() - before;
    }

    // Host memory the kernels may touch.
    void allow(void const* p, std::size_t bytes) { allowed_.push_back({reinterpret_cast<std::uintptr_t>(p), bytes}); }
    // The fault record (dispatch/device_fault.hpp) the kernels are given: the backend's, or the
    // runner's own.
    void set_fault_record(detail::DeviceFaultRecord* record) noexcept { fault_record_ = record; }
    [[nodiscard]] detail::DeviceFaultRecord const& recorded_fault() const noexcept { return *fault_record_; }
    [[nodiscard]] std::uint64_t fault_record() override {
        allow(fault_record_, sizeof *fault_record_);
        return reinterpret_cast<std::uint64_t>(fault_record_);
    }
    // Tensor maps as the simulator reads them (the spec's bytes), checked as the driver checks them.
    [[nodiscard]] bool encodes_tensor_maps() const noexcept override { return encodes_tensor_maps_; }
    // A device whose driver has no cuTensorMapEncodeTiled (before CUDA 12): no TMA kernels chosen.
    void set_encodes_tensor_maps(bool encodes) noexcept { encodes_tensor_maps_ = encodes; }
    [[nodiscard]] ptx::TensorMap encode_tensor_map(ptx::TensorMapSpec const& spec) override {
        if (!encodes_tensor_maps_) throw Unsupported("simulated cuda: this runner encodes no tensor maps");
        return ptxsim::encode_tensor_map(spec);
    }
    [[nodiscard]] std::vector<LaunchRecord> const& launches() const noexcept { return launches_; }
    void clear_launches() { launches_.clear(); }
    [[nodiscard]] std::size_t live_temporaries() const noexcept { return temporaries_.size(); }
    [[nodiscard]] std::uint64_t executed() const noexcept { return executed_; }

private:
    struct Entry {
        explicit Entry(ptx::Kernel k) : kernel(std::move(k)) {}
        ptx::Kernel kernel;
        std::string text;
        std::unique_ptr<Simulator> simulator;
    };
    int multiprocessors_;
    ptx::Target target_;
    unsigned max_shared_bytes_ = 48 * 1024;
    cuda::MultiprocessorSharedMemory multiprocessor_shared_;
    std::map<std::string, std::unique_ptr<Entry>> kernels_;
    std::map<std::uint64_t, std::unique_ptr<std::vector<std::uint8_t>>> temporaries_;
    std::vector<std::pair<std::uintptr_t, std::size_t>> allowed_;
    std::vector<LaunchRecord> launches_;
    std::uint64_t executed_ = 0;
    bool encodes_tensor_maps_ = true;
    detail::DeviceFaultRecord own_fault_record_{};
    detail::DeviceFaultRecord* fault_record_ = &own_fault_record_;
};

// A host buffer of floats (or other values) at a chosen offset from a 256-byte boundary, seen as a
// TensorView: offset_elements shifts the view to test unaligned starts.
template <class T>
class HostView {
public:
    HostView(SimulatedRunner& runner, std::size_t n, std::size_t offset_elements, DType dtype)
        : storage_((n + offset_elements) * sizeof(T) + 512), n_(n) {
        auto const base = (reinterpret_cast<std::uintptr_t>(storage_.data()) + 255) / 256 * 256;
        std::int64_t const values[] = {static_cast<std::int64_t>(n * block_elements(dtype))};
        view_ = detail::contiguous_view(base, offset_elements * sizeof(T), dtype, values);
        runner.allow(data(), n * sizeof(T));
    }
    [[nodiscard]] T* data() const { return reinterpret_cast<T*>(view_.buffer + view_.offset); }
    [[nodiscard]] detail::TensorView const& view() const { return view_; }
    // The same elements as a row-major [rows, cols] view (cols in values, for the block types).
    [[nodiscard]] detail::TensorView matrix(std::size_t rows, std::size_t cols) const {
        std::int64_t const dims[] = {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
        return detail::contiguous_view(view_.buffer, view_.offset, view_.dtype, dims);
    }
    [[nodiscard]] std::vector<T> values() const { return std::vector<T>(data(), data() + n_); }
    void fill(std::vector<T> const& v) {
        if (!v.empty()) std::memcpy(data(), v.data(), v.size() * sizeof(T));  // memcpy from null is UB
    }

private:
    std::vector<std::uint8_t> storage_;
    std::size_t n_;
    detail::TensorView view_;
};

}  // namespace rayo::test::ptxsim
