// The PTX simulator's Hopper instructions (tests/support/ptx_simulator.hpp), which is what checks
// the TMA / wgmma kernels in CI: small kernels built with the builder's Hopper atoms, each also
// assembled by ptxas for sm_90 / sm_90a. TMA loads of 2-d and 3-d boxes (f16 and f32, 128-byte
// swizzle or none, boxes partly outside the tensor at negative and past-the-end coordinates) copied
// out of shared memory byte for byte; TMA stores clipped to the tensor; one warpgroup's wgmma
// m64nNk16 (N 8, 64, 256; f16 and bf16; b K- and N-major; 128-byte swizzle and none) from shared
// tiles written with st.shared where the canonical layouts place each element, scale-d false over
// NaN accumulators then a chain of two MMAs, against a float64 reference; a descriptor whose
// offsets do not match the tiles gives wrong results; TMA tiles feeding wgmma as a GEMM does;
// tensor map parameters, the driver's checks of a map, mbarrier parities and what is not simulated.
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/dtype.hpp>
#include <rayo/ptx/tensor_map.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using ptxsim::Dim3;
using ptxsim::SimulatedRunner;
using ptxsim::SimulationError;
using ptxsim::Simulator;

constexpr float poison = -1.2345678e30f;

// Fresh per run, printed by SCOPED_TRACE on failure.
std::uint32_t fresh_seed() {
    static std::random_device device;
    return device();
}

// Host memory aligned to 1024 bytes (tensor addresses must be 16-byte aligned).
class Buffer {
public:
    explicit Buffer(std::size_t bytes, std::uint8_t fill = 0) : storage_(bytes + 1024, fill), bytes_(bytes) {}
    [[nodiscard]] std::uint8_t* data() {
        auto const p = (reinterpret_cast<std::uintptr_t>(storage_.data()) + 1023) / 1024 * 1024;
        return reinterpret_cast<std::uint8_t*>(p);
    }
    [[nodiscard]] std::uint64_t address() { return reinterpret_cast<std::uintptr_t>(data()); }
    [[nodiscard]] std::size_t bytes() const { return bytes_; }
    template <class T>
    [[nodiscard]] T get(std::size_t index) {
        T v;
        std::memcpy(&v, data() + index * sizeof(T), sizeof(T));
        return v;
    }
    template <class T>
    void set(std::size_t index, T v) {
        std::memcpy(data() + index * sizeof(T), &v, sizeof(T));
    }

private:
    std::vector<std::uint8_t> storage_;
    std::size_t bytes_;
};

void fill_random(Buffer& b, std::uint32_t seed) {
    std::mt19937 rng(seed);
    for (std::size_t i = 0; i < b.bytes(); ++i) b.data()[i] = static_cast<std::uint8_t>(rng());
}

std::uint16_t bits16(Type t, float v) {
    return t == Type::bf16 ? rayo::detail::float_to_bfloat16_bits(v) : rayo::detail::float_to_half_bits(v);
}
double value16(Type t, std::uint16_t b) {
    return t == Type::bf16 ? double{rayo::detail::bfloat16_bits_to_float(b)}
                           : double{rayo::detail::half_bits_to_float(b)};
}

// ptxas accepts the kernel (checked where the build found ptxas; the simulation runs regardless).
void assembles(Kernel const& k, Target target) {
    if (!ptxas_path().empty()) expect_assembles(k, target);
}

// Runs `run` and expects it to stop with a SimulationError that says `what`.
template <class Run>
void expect_simulation_error(Run run, std::string_view what, std::string_view failure) {
    try {
        run();
        ADD_FAILURE() << failure;
    } catch (SimulationError const& e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
}

// Where a 128-byte swizzled box puts element (row, col) of rows of 128 bytes: the 16-byte chunk
// col·size / 16 of the row moves to chunk (col·size / 16) ^ (row % 8) (CU_TENSOR_MAP_SWIZZLE_128B).
std::size_t swizzled_128(std::size_t row, std::size_t col, std::size_t size) {
    std::size_t const byte = col * size;
    return row * 128 + (((byte / 16) ^ (row % 8)) * 16) + byte % 16;
}

// ---- TMA loads

std::string coordinate_name(unsigned i) {
    std::string name = "c";
    name += std::to_string(i);
    return name;
}

struct LoadCase {
    std::string name;
    Type element;
    unsigned rank;
    std::array<std::uint64_t, 5> dims;
    std::array<std::uint64_t, 5> strides;  // bytes; [0] unused
    std::array<std::uint32_t, 5> box;
    TensorMapSwizzle swizzle;
    std::vector<std::int32_t> at;
};

std::size_t box_bytes(LoadCase const& c) {
    std::size_t n = static_cast<std::size_t>(bytes_of(c.element));
    for (unsigned i = 0; i < c.rank; ++i) n *= c.box[i];
    return n;
}
std::size_t tensor_bytes(LoadCase const& c) {
    return c.rank == 1 ? c.dims[0] * static_cast<std::size_t>(bytes_of(c.element))
                       : c.strides[c.rank - 1] * c.dims[c.rank - 1];
}

// One block of 128 threads: thread 0 sets up a barrier, announces the box's bytes and starts the
// TMA load of the box at the coordinates (parameters) into a 1024-byte aligned shared array; every
// thread waits for the barrier, then they copy the shared bytes out word by word.
Kernel tma_load_kernel(std::string const& name, unsigned rank, unsigned bytes) {
    Kernel k(name);
    Reg const map = k.tensor_map_param("map");
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    std::vector<Reg> at;
    for (unsigned i = 0; i < rank; ++i) at.push_back(k.param(Type::s32, coordinate_name(i)));
    Reg const tile = k.shared_address(k.shared_array("tile", Type::b8, bytes, 1024));
    Reg const barrier = k.shared_address(k.shared_array("barrier", Type::b64, 1, 8));
    Reg const tid = k.special(Special::tid_x);
    Reg const leader = k.setp(Cmp::eq, tid, 0u);
    k.if_then(leader, [&] {
        k.prefetch_tensor_map(map);
        k.mbarrier_init(barrier, 1u);
        k.fence_mbarrier_init();
    });
    k.bar_sync();
    k.if_then(leader, [&] {
        k.mbarrier_arrive_expect_tx(barrier, bytes);
        k.tma_load(tile, map, at, barrier);
    });
    k.mbarrier_wait(barrier, 0u);
    Reg const i = k.reg(Type::u32);
    k.for_range(i, tid, bytes / 4, 128u, [&] {
        Reg const v = k.ld(Space::shared, Type::b32, Address(k.add(tile, k.shl(i, 2))));
        k.st(Space::global, Type::b32, k.element_address(out, i, 4), v);
    });
    return k;
}

// Visits every element of the box: its byte offset in shared memory (element (j0, j1, ...) at
// (j0 + box0·(j1 + ...))·size, swizzled as the map says) and, where it lies inside the tensor, its
// byte offset there.
template <class Visit>
void for_each_box_element(LoadCase const& c, Visit&& visit) {
    std::size_t const size = static_cast<std::size_t>(bytes_of(c.element));
    std::size_t rows = 1;
    for (unsigned i = 1; i < c.rank; ++i) rows *= c.box[i];
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < c.box[0]; ++j) {
            std::size_t const offset =
                c.swizzle == TensorMapSwizzle::swizzle_128b ? swizzled_128(r, j, size) : (r * c.box[0] + j) * size;
            bool inside = true;
            std::size_t at = 0, rest = r;
            for (unsigned i = 0; i < c.rank; ++i) {
                std::int64_t const index = c.at[i] + static_cast<std::int64_t>(i == 0 ? j : rest % c.box[i]);
                if (i > 0) rest /= c.box[i];
                if (index < 0 || static_cast<std::uint64_t>(index) >= c.dims[i])
                    inside = false;
                else
                    at += static_cast<std::size_t>(index) * (i == 0 ? size : c.strides[i]);
            }
            visit(offset, inside ? std::optional<std::size_t>(at) : std::nullopt);
        }
}

// The box as the TMA leaves it in shared memory, from the tensor's bytes; zeros outside the tensor.
std::vector<std::uint8_t> expected_box(LoadCase const& c, std::uint8_t const* tensor) {
    std::size_t const size = static_cast<std::size_t>(bytes_of(c.element));
    std::vector<std::uint8_t> image(box_bytes(c), 0);
    for_each_box_element(c, [&](std::size_t shared, std::optional<std::size_t> global) {
        if (global) std::memcpy(image.data() + shared, tensor + *global, size);
    });
    return image;
}

TEST(PtxHopperSimulator, TmaLoadsBoxesWithSwizzleAndZeroFill) {
    std::vector<LoadCase> const cases = {
        // f16 [40 rows, 100 columns], rows 208 bytes apart (8 bytes of padding the box must not read).
        {"sw128_inside", Type::f16, 2, {100, 40}, {0, 208}, {64, 16}, TensorMapSwizzle::swizzle_128b, {0, 0}},
        {"sw128_past_end", Type::f16, 2, {100, 40}, {0, 208}, {64, 16}, TensorMapSwizzle::swizzle_128b, {60, 30}},
        {"sw128_negative", Type::f16, 2, {100, 40}, {0, 208}, {64, 16}, TensorMapSwizzle::swizzle_128b, {-8, -3}},
        {"sw128_f32", Type::f32, 2, {50, 20}, {0, 208}, {32, 8}, TensorMapSwizzle::swizzle_128b, {30, -2}},
        {"plain_past_end", Type::f16, 2, {100, 40}, {0, 208}, {24, 5}, TensorMapSwizzle::none, {90, 37}},
        {"plain_negative", Type::f16, 2, {100, 40}, {0, 208}, {24, 5}, TensorMapSwizzle::none, {-16, -2}},
        {"plain_3d", Type::f16, 3, {40, 6, 3}, {0, 96, 592}, {16, 4, 2}, TensorMapSwizzle::none, {30, 4, 2}},
        {"plain_3d_negative", Type::f16, 3, {40, 6, 3}, {0, 96, 592}, {16, 4, 2}, TensorMapSwizzle::none, {-4, -1, -1}},
        {"plain_1d", Type::f16, 1, {70}, {0}, {32}, TensorMapSwizzle::none, {50}},
    };
    for (LoadCase const& c : cases) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " seed " + std::to_string(seed));
        auto const bytes = static_cast<unsigned>(box_bytes(c));
        Kernel const k = tma_load_kernel("tma_load_" + c.name, c.rank, bytes);
        assembles(k, Target::sm_90);

        Buffer tensor(tensor_bytes(c));
        fill_random(tensor, seed);
        Buffer out(bytes, 0xA5);
        TensorMapSpec spec{.address = tensor.address(),
                           .element = c.element,
                           .rank = c.rank,
                           .dims = c.dims,
                           .strides = c.strides,
                           .box = c.box,
                           .swizzle = c.swizzle};
        TensorMap const map = ptxsim::encode_tensor_map(spec);
        Simulator sim(k);
        sim.allow(tensor.data(), tensor.bytes());
        sim.allow(out.data(), out.bytes());
        std::vector<std::uint64_t> params{ptxsim::param(&map), out.address()};
        for (std::int32_t a : c.at) params.push_back(static_cast<std::uint32_t>(a));
        sim.run({1, 1, 1}, {128, 1, 1}, params);

        std::vector<std::uint8_t> const want = expected_box(c, tensor.data());
        std::size_t wrong = 0;
        for (std::size_t b = 0; b < bytes; ++b)
            if (out.data()[b] != want[b] && ++wrong <= 5)
                ADD_FAILURE() << "shared byte " << b << ": " << int(out.data()[b]) << ", want " << int(want[b]);
        EXPECT_EQ(wrong, 0u);
        // The box is not all zeros: the placement, not only the zero fill, was checked.
        EXPECT_TRUE(std::any_of(want.begin(), want.end(), [](std::uint8_t v) { return v != 0; }));
    }
}

// ---- TMA stores

// 128 threads copy a box's shared image (host-made) into a 1024-byte aligned shared array, fence
// it for the async proxy and synchronise; thread 0 stores it with the TMA and waits for the read.
Kernel tma_store_kernel(std::string const& name, unsigned rank, unsigned bytes) {
    Kernel k(name);
    Reg const map = k.tensor_map_param("map");
    Reg const image = k.cvta_to_global(k.param(Type::u64, "image"));
    std::vector<Reg> at;
    for (unsigned i = 0; i < rank; ++i) at.push_back(k.param(Type::s32, coordinate_name(i)));
    Reg const tile = k.shared_address(k.shared_array("tile", Type::b8, bytes, 1024));
    Reg const tid = k.special(Special::tid_x);
    Reg const i = k.reg(Type::u32);
    k.for_range(i, tid, bytes / 4, 128u, [&] {
        Reg const v = k.ld(Space::global, Type::b32, k.element_address(image, i, 4));
        k.st(Space::shared, Type::b32, Address(k.add(tile, k.shl(i, 2))), v);
    });
    k.fence_proxy_async_shared();
    k.bar_sync();
    k.if_then(k.setp(Cmp::eq, tid, 0u), [&] {
        k.tma_store(map, at, tile);
        k.cp_async_bulk_commit();
        k.cp_async_bulk_wait_read(0);
    });
    return k;
}

TEST(PtxHopperSimulator, TmaStoresClipToTheTensor) {
    std::vector<LoadCase> const cases = {
        {"sw128_inside", Type::f16, 2, {100, 40}, {0, 208}, {64, 16}, TensorMapSwizzle::swizzle_128b, {8, 4}},
        {"sw128_past_end", Type::f16, 2, {100, 40}, {0, 208}, {64, 16}, TensorMapSwizzle::swizzle_128b, {60, 30}},
        {"sw128_negative", Type::bf16, 2, {100, 40}, {0, 208}, {64, 16}, TensorMapSwizzle::swizzle_128b, {-8, -3}},
        {"plain_past_end", Type::f16, 2, {100, 40}, {0, 208}, {24, 5}, TensorMapSwizzle::none, {90, 37}},
        {"plain_3d", Type::f32, 3, {20, 6, 3}, {0, 96, 592}, {8, 4, 2}, TensorMapSwizzle::none, {-3, 4, 2}},
    };
    for (LoadCase const& c : cases) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " seed " + std::to_string(seed));
        auto const bytes = static_cast<unsigned>(box_bytes(c));
        Kernel const k = tma_store_kernel("tma_store_" + c.name, c.rank, bytes);
        assembles(k, Target::sm_90);

        Buffer tensor(tensor_bytes(c)), image(bytes);
        fill_random(tensor, seed);
        fill_random(image, seed + 1);
        std::vector<std::uint8_t> const before(tensor.data(), tensor.data() + tensor.bytes());
        SimulatedRunner runner;
        runner.allow(tensor.data(), tensor.bytes());
        runner.allow(image.data(), image.bytes());
        TensorMap map = runner.encode_tensor_map({.address = tensor.address(),
                                                  .element = c.element,
                                                  .rank = c.rank,
                                                  .dims = c.dims,
                                                  .strides = c.strides,
                                                  .box = c.box,
                                                  .swizzle = c.swizzle});
        std::uint64_t image_address = image.address();
        std::vector<std::int32_t> at = c.at;
        std::vector<void*> args{&map, &image_address};
        for (std::int32_t& a : at) args.push_back(&a);
        runner.launch(
            k.name(), [&] { return k; }, {.grid = {1, 1, 1}, .block = {128, 1, 1}}, args);

        // What the tensor should hold: its old bytes, with the box's elements inside it replaced.
        std::vector<std::uint8_t> want = before;
        std::size_t const size = static_cast<std::size_t>(bytes_of(c.element));
        std::size_t written = 0;
        for_each_box_element(c, [&](std::size_t shared, std::optional<std::size_t> global) {
            if (!global) return;
            std::memcpy(want.data() + *global, image.data() + shared, size);
            ++written;
        });
        EXPECT_GT(written, 0u);
        std::size_t wrong = 0;
        for (std::size_t b = 0; b < tensor.bytes(); ++b)
            if (tensor.data()[b] != want[b] && ++wrong <= 5)
                ADD_FAILURE() << "tensor byte " << b << ": " << int(tensor.data()[b]) << ", want " << int(want[b])
                              << (want[b] == before[b] ? " (outside the box or the tensor: not to be written)" : "");
        EXPECT_EQ(wrong, 0u);
    }
}

// ---- wgmma

// How a 16-bit operand of wgmma lies in shared memory: the descriptor's swizzle mode (0 none, 1
// 128-byte), whether it is MN-major (transposed), its leading and stride byte offsets, and how far
// the start moves per k16 step.
struct OperandLayout {
    unsigned swizzle = 1;
    bool mn_major = false;
    unsigned leading = 0, stride = 0;
    unsigned k_step = 0;
};

// The byte offset of element (mn, k) in a tile written as the layouts are documented, not through
// the descriptor's formula: 128-byte swizzled tiles as the TMA leaves a row-major box of 64
// elements a row (K-major: a row per mn; MN-major: a row per k, 64-column blocks `leading` apart),
// 1024-byte atoms of 8 rows; unswizzled ones as core matrices of 8 rows of 16 bytes, core matrix
// (mn / 8, k / 8) at (mn / 8)·stride + (k / 8)·leading, its rows along mn (K-major) or k (MN-major).
std::size_t tile_offset(OperandLayout const& l, unsigned mn, unsigned k) {
    if (l.swizzle == 1)
        return l.mn_major ? (mn / 64) * l.leading + swizzled_128(k, mn % 64, 2) : swizzled_128(mn, k, 2);
    std::size_t const core = (mn / 8) * l.stride + (k / 8) * l.leading;
    return core + (l.mn_major ? (k % 8) * 16 + (mn % 8) * 2 : (mn % 8) * 16 + (k % 8) * 2);
}

std::uint64_t descriptor_bits(OperandLayout const& l) {
    return (std::uint64_t{(l.leading >> 4) & 0x3fffu} << 16) | (std::uint64_t{(l.stride >> 4) & 0x3fffu} << 32) |
           (std::uint64_t{l.swizzle} << 62);
}

struct WgmmaCase {
    std::string name;
    Type input;
    unsigned n;
    OperandLayout a, b;
    // The layout the descriptors claim, where it differs from how the tiles are written.
    std::optional<OperandLayout> a_claimed, b_claimed;
};

// Thread t of the warpgroup stores d[4j + 2h + e] to out[row · n + col] with row = 16(t / 32) +
// (t % 32) / 4 + 8h and col = 8j + 2(t % 4) + e.
void store_fragment(Kernel& k, Reg out, Reg tid, unsigned n, std::vector<Reg> const& acc) {
    Reg const row = k.add(k.shl(k.shr(tid, 5), 4), k.shr(k.and_(tid, 31u), 2));
    Reg const col = k.shl(k.and_(tid, 3u), 1);
    Reg const base = k.element_address(out, k.add(k.mul(row, n), col), 4);
    for (unsigned j = 0; j < n / 8; ++j)
        for (unsigned h = 0; h < 2; ++h)
            for (unsigned e = 0; e < 2; ++e)
                k.st(Space::global, Type::f32, Address(base, static_cast<std::int64_t>((8 * h * n + 8 * j + e) * 4)),
                     acc[4 * j + 2 * h + e]);
}

// One warpgroup: the tiles' images (host-made, a of 64 × 32, b of 32 × n) copied into 1024-byte
// aligned shared arrays with st.shared, fenced for the async proxy; then
//   first: a wgmma over k 0..15 with scale-d false, accumulators holding NaN before;
//   both:  a wgmma over k 0..15 with scale-d false and one over k 16..31 with scale-d true, one group.
Kernel wgmma_kernel(WgmmaCase const& c, unsigned a_bytes, unsigned b_bytes) {
    Kernel k("wgmma_" + c.name);
    Reg const a_image = k.cvta_to_global(k.param(Type::u64, "a_image"));
    Reg const b_image = k.cvta_to_global(k.param(Type::u64, "b_image"));
    Reg const first = k.cvta_to_global(k.param(Type::u64, "first"));
    Reg const both = k.cvta_to_global(k.param(Type::u64, "both"));
    Reg const a_tile = k.shared_address(k.shared_array("a_tile", Type::b8, a_bytes, 1024));
    Reg const b_tile = k.shared_address(k.shared_array("b_tile", Type::b8, b_bytes, 1024));
    Reg const tid = k.special(Special::tid_x);
    for (auto [image, tile, bytes] : {std::tuple{a_image, a_tile, a_bytes}, std::tuple{b_image, b_tile, b_bytes}}) {
        Reg const i = k.reg(Type::u32);
        k.for_range(i, tid, bytes / 4, 128u, [&] {
            Reg const v = k.ld(Space::global, Type::b32, k.element_address(image, i, 4));
            k.st(Space::shared, Type::b32, Address(k.add(tile, k.shl(i, 2))), v);
        });
    }
    k.fence_proxy_async_shared();
    k.bar_sync();
    OperandLayout const a_claim = c.a_claimed.value_or(c.a), b_claim = c.b_claimed.value_or(c.b);
    Reg const a_desc = k.or_(k.cvt(Type::u64, k.shr(a_tile, 4)), static_cast<std::int64_t>(descriptor_bits(a_claim)));
    Reg const b_desc = k.or_(k.cvt(Type::u64, k.shr(b_tile, 4)), static_cast<std::int64_t>(descriptor_bits(b_claim)));
    Reg const a_next = k.add(a_desc, a_claim.k_step / 16), b_next = k.add(b_desc, b_claim.k_step / 16);
    Reg const no = k.setp(Cmp::ne, tid, tid), yes = k.setp(Cmp::eq, tid, tid);
    std::vector<Reg> acc;
    for (unsigned i = 0; i < c.n / 2; ++i) acc.push_back(k.mov(Type::f32, std::numeric_limits<float>::quiet_NaN()));
    k.wgmma_fence();
    k.wgmma(c.input, c.n, acc, a_desc, b_desc, no, false, c.b.mn_major);
    k.wgmma_commit();
    k.wgmma_wait(0);
    store_fragment(k, first, tid, c.n, acc);
    k.wgmma_fence();
    k.wgmma(c.input, c.n, acc, a_desc, b_desc, no, false, c.b.mn_major);
    k.wgmma(c.input, c.n, acc, a_next, b_next, yes, false, c.b.mn_major);
    k.wgmma_commit();
    k.wgmma_wait(0);
    store_fragment(k, both, tid, c.n, acc);
    return k;
}

struct WgmmaResult {
    double first_error = 0, both_error = 0;  // max |got − want| / (Σ|products| + tiny)
    std::size_t unwritten = 0;
};

WgmmaResult run_wgmma(WgmmaCase const& c, std::uint32_t seed) {
    unsigned const n = c.n;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<std::uint16_t> a(64 * 32), b(32 * n);  // a[m][k], b[k][n]
    for (auto& v : a) v = bits16(c.input, dist(rng));
    for (auto& v : b) v = bits16(c.input, dist(rng));

    // The images, every byte the tiles do not use a NaN (what a wrong address would read).
    std::size_t a_bytes = 0, b_bytes = 0;
    for (unsigned m = 0; m < 64; ++m)
        for (unsigned k = 0; k < 32; ++k) a_bytes = std::max(a_bytes, tile_offset(c.a, m, k) + 2);
    for (unsigned j = 0; j < n; ++j)
        for (unsigned k = 0; k < 32; ++k) b_bytes = std::max(b_bytes, tile_offset(c.b, j, k) + 2);
    a_bytes = (a_bytes + 1023) / 1024 * 1024;
    b_bytes = (b_bytes + 1023) / 1024 * 1024;
    std::uint16_t const nan = c.input == Type::bf16 ? 0x7fc0 : 0x7e00;
    Buffer a_image(a_bytes), b_image(b_bytes);
    for (std::size_t i = 0; i < a_bytes / 2; ++i) a_image.set<std::uint16_t>(i, nan);
    for (std::size_t i = 0; i < b_bytes / 2; ++i) b_image.set<std::uint16_t>(i, nan);
    for (unsigned m = 0; m < 64; ++m)
        for (unsigned k = 0; k < 32; ++k) std::memcpy(a_image.data() + tile_offset(c.a, m, k), &a[m * 32 + k], 2);
    for (unsigned j = 0; j < n; ++j)
        for (unsigned k = 0; k < 32; ++k) std::memcpy(b_image.data() + tile_offset(c.b, j, k), &b[k * n + j], 2);

    Kernel const kernel = wgmma_kernel(c, static_cast<unsigned>(a_bytes), static_cast<unsigned>(b_bytes));
    EXPECT_TRUE(kernel.architecture_specific());
    assembles(kernel, Target::sm_90a);

    Buffer first(64 * n * 4), both(64 * n * 4);
    for (std::size_t i = 0; i < 64 * n; ++i) first.set(i, poison), both.set(i, poison);
    SimulatedRunner runner;  // an sm_90: the kernel is emitted for sm_90a
    for (Buffer* buffer : {&a_image, &b_image, &first, &both}) runner.allow(buffer->data(), buffer->bytes());
    runner.run(
        kernel.name(), [&] { return kernel; }, {.grid = {1, 1, 1}, .block = {128, 1, 1}}, a_image.address(),
        b_image.address(), first.address(), both.address());

    WgmmaResult r;
    for (unsigned m = 0; m < 64; ++m)
        for (unsigned j = 0; j < n; ++j) {
            double want_first = 0, want_both = 0, size_first = 0, size_both = 0;
            for (unsigned k = 0; k < 32; ++k) {
                double const p = value16(c.input, a[m * 32 + k]) * value16(c.input, b[k * n + j]);
                if (k < 16) want_first += p, size_first += std::fabs(p);
                want_both += p, size_both += std::fabs(p);
            }
            float const got_first = first.get<float>(m * n + j), got_both = both.get<float>(m * n + j);
            r.unwritten += (got_first == poison) + (got_both == poison);
            auto const error = [](float got, double want, double size) {
                return std::isfinite(got) ? std::fabs(got - want) / (size + 1e-30)
                                          : std::numeric_limits<double>::infinity();
            };
            r.first_error = std::max(r.first_error, error(got_first, want_first, size_first));
            r.both_error = std::max(r.both_error, error(got_both, want_both, size_both));
        }
    return r;
}

// The canonical layouts of a 64 × 32 a and a 32 × n b (wgmma's k is 16: two steps).
OperandLayout k_major_swizzled() {
    return {.swizzle = 1, .mn_major = false, .leading = 16, .stride = 1024, .k_step = 32};
}
OperandLayout n_major_swizzled() {
    // 64-column blocks of 32 k rows (4 KiB) one after another; 8-row atoms 1 KiB apart.
    return {.swizzle = 1, .mn_major = true, .leading = 32 * 128, .stride = 1024, .k_step = 2 * 1024};
}
// Core matrices: along k `leading` = 128 apart (k 0..31: 4 of them), then along mn 512 apart.
OperandLayout k_major_plain() {
    return {.swizzle = 0, .mn_major = false, .leading = 128, .stride = 512, .k_step = 256};
}
OperandLayout n_major_plain() { return {.swizzle = 0, .mn_major = true, .leading = 128, .stride = 512, .k_step = 256}; }

TEST(PtxHopperSimulator, WgmmaMatchesFloat64InTheCanonicalLayouts) {
    std::vector<WgmmaCase> const cases = {
        {"n8_f16_kk", Type::f16, 8, k_major_swizzled(), k_major_swizzled(), {}, {}},
        {"n8_bf16_kk", Type::bf16, 8, k_major_swizzled(), k_major_swizzled(), {}, {}},
        {"n64_f16_kn", Type::f16, 64, k_major_swizzled(), n_major_swizzled(), {}, {}},
        {"n64_bf16_kk", Type::bf16, 64, k_major_swizzled(), k_major_swizzled(), {}, {}},
        {"n256_bf16_kn", Type::bf16, 256, k_major_swizzled(), n_major_swizzled(), {}, {}},
        {"n256_f16_kk", Type::f16, 256, k_major_swizzled(), k_major_swizzled(), {}, {}},
        {"n64_f16_plain_kk", Type::f16, 64, k_major_plain(), k_major_plain(), {}, {}},
        {"n64_bf16_plain_kn", Type::bf16, 64, k_major_plain(), n_major_plain(), {}, {}},
    };
    for (WgmmaCase const& c : cases) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " seed " + std::to_string(seed));
        WgmmaResult const r = run_wgmma(c, seed);
        EXPECT_EQ(r.unwritten, 0u);
        // f32 results of double sums: within half an f32 ulp of the sum, far below 1e-6 of Σ|products|.
        EXPECT_LT(r.first_error, 1e-6) << "scale-d false over NaN accumulators";
        EXPECT_LT(r.both_error, 1e-6) << "two MMAs chained in one group";
    }
}

// Descriptors that do not describe the tiles as written read other elements (or NaN padding): the
// results must be wrong, so the comparison above can fail.
TEST(PtxHopperSimulator, WgmmaWithMismatchedDescriptorOffsetsGivesWrongResults) {
    OperandLayout a_half_stride = k_major_swizzled();
    a_half_stride.stride = 512;
    OperandLayout b_swapped = n_major_swizzled();
    std::swap(b_swapped.leading, b_swapped.stride);
    b_swapped.k_step = n_major_swizzled().k_step;
    OperandLayout b_plain_swapped = n_major_plain();
    std::swap(b_plain_swapped.leading, b_plain_swapped.stride);
    std::vector<WgmmaCase> const cases = {
        {"bad_sbo_a", Type::f16, 64, k_major_swizzled(), k_major_swizzled(), a_half_stride, {}},
        {"bad_lbo_sbo_b", Type::bf16, 128, k_major_swizzled(), n_major_swizzled(), {}, b_swapped},
        {"bad_plain_b", Type::f16, 64, k_major_plain(), n_major_plain(), {}, b_plain_swapped},
    };
    for (WgmmaCase const& c : cases) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " seed " + std::to_string(seed));
        WgmmaResult const r = run_wgmma(c, seed);
        EXPECT_GT(r.first_error, 1e-3);
        EXPECT_GT(r.both_error, 1e-3);
    }
}

// Accumulators read between wgmma.mma_async and the wgmma.wait_group that retires it are NaN
// (undefined on the hardware): a kernel that forgets the wait cannot pass.
TEST(PtxHopperSimulator, WgmmaAccumulatorsAreUndefinedUntilTheWait) {
    WgmmaCase const c{"early_read", Type::f16, 8, k_major_swizzled(), k_major_swizzled(), {}, {}};
    Kernel k("wgmma_early_read");
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const tile = k.shared_address(k.shared_array("tile", Type::b8, 8192, 1024));
    Reg const tid = k.special(Special::tid_x);
    Reg const i = k.reg(Type::u32);
    k.for_range(i, tid, 8192 / 4, 128u, [&] {
        k.st(Space::shared, Type::b32, Address(k.add(tile, k.shl(i, 2))), 0x3c003c00u);  // 1.0 halves
    });
    k.fence_proxy_async_shared();
    k.bar_sync();
    Reg const desc = k.or_(k.cvt(Type::u64, k.shr(tile, 4)), static_cast<std::int64_t>(descriptor_bits(c.a)));
    std::vector<Reg> acc;
    for (unsigned j = 0; j < 4; ++j) acc.push_back(k.mov(Type::f32, 0.0f));
    k.wgmma_fence();
    k.wgmma(Type::f16, 8, acc, desc, desc, k.setp(Cmp::eq, tid, tid));
    k.wgmma_commit();
    store_fragment(k, out, tid, 8, acc);  // too early
    k.wgmma_wait(0);
    store_fragment(k, k.add(out, 64 * 8 * 4), tid, 8, acc);
    assembles(k, Target::sm_90a);

    Buffer out_buffer(2 * 64 * 8 * 4);
    SimulatedRunner runner;
    runner.allow(out_buffer.data(), out_buffer.bytes());
    runner.run(
        k.name(), [&] { return k; }, {.grid = {1, 1, 1}, .block = {128, 1, 1}}, out_buffer.address());
    for (std::size_t e = 0; e < 64 * 8; ++e) {
        EXPECT_EQ(out_buffer.get<std::uint32_t>(e), 0x7fc00badu) << "element " << e << " before the wait";
        EXPECT_EQ(out_buffer.get<float>(64 * 8 + e), 16.0f) << "element " << e << " after the wait";
    }
}

// ---- TMA tiles feeding wgmma, as the Hopper GEMM composes them

// a [m, k] and b ([k, n], or [n, k] transposed) f16 row-major in global memory; one block: thread 0
// loads a's 64 × 64 box and b's (two 64 × 64 boxes of [k, n], or one 64 × 128 box of [n, k]) with
// the 128-byte swizzle against one barrier; a warpgroup waits, issues four m64n128k16 MMAs along k
// (K-major a: 32 bytes a step; b 32 bytes, or 16 rows = 2 KiB) and stores the 64 × 128 result.
Kernel tma_wgmma_kernel(bool b_transposed) {
    Kernel k(std::string("tma_wgmma_") + (b_transposed ? "nt" : "nn"));
    Reg const a_map = k.tensor_map_param("a_map");
    Reg const b_map = k.tensor_map_param("b_map");
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const a_tile = k.shared_address(k.shared_array("a_tile", Type::b8, 64 * 128, 1024));
    Reg const b_tile = k.shared_address(k.shared_array("b_tile", Type::b8, 128 * 128, 1024));
    Reg const barrier = k.shared_address(k.shared_array("barrier", Type::b64, 1, 8));
    Reg const tid = k.special(Special::tid_x);
    Reg const leader = k.setp(Cmp::eq, tid, 0u);
    k.if_then(leader, [&] {
        k.mbarrier_init(barrier, 1u);
        k.fence_mbarrier_init();
    });
    k.bar_sync();
    k.if_then(leader, [&] {
        Reg const zero = k.mov(Type::s32, 0), sixty_four = k.mov(Type::s32, 64);
        k.mbarrier_arrive_expect_tx(barrier, 64 * 128 + 128 * 128);
        std::array const a_at{zero, zero};
        k.tma_load(a_tile, a_map, a_at, barrier);
        if (b_transposed) {
            k.tma_load(b_tile, b_map, a_at, barrier);
        } else {
            std::array const second{sixty_four, zero};
            k.tma_load(b_tile, b_map, a_at, barrier);
            k.tma_load(k.add(b_tile, 64 * 128), b_map, second, barrier);
        }
    });
    k.mbarrier_wait(barrier, 0u);
    OperandLayout const b_layout =
        b_transposed
            ? k_major_swizzled()
            : OperandLayout{.swizzle = 1, .mn_major = true, .leading = 64 * 128, .stride = 1024, .k_step = 2048};
    Reg const a_desc =
        k.or_(k.cvt(Type::u64, k.shr(a_tile, 4)), static_cast<std::int64_t>(descriptor_bits(k_major_swizzled())));
    Reg const b_desc = k.or_(k.cvt(Type::u64, k.shr(b_tile, 4)), static_cast<std::int64_t>(descriptor_bits(b_layout)));
    Reg const no = k.setp(Cmp::ne, tid, tid), yes = k.setp(Cmp::eq, tid, tid);
    std::vector<Reg> acc;  // written before the first MMA, which ignores them (scale-d false)
    for (unsigned i = 0; i < 64; ++i) acc.push_back(k.mov(Type::f32, 0.0f));
    k.wgmma_fence();
    for (unsigned step = 0; step < 4; ++step)
        k.wgmma(Type::f16, 128, acc, step == 0 ? a_desc : k.add(a_desc, step * 2),
                step == 0 ? b_desc : k.add(b_desc, step * b_layout.k_step / 16), step == 0 ? no : yes, false,
                !b_transposed);
    k.wgmma_commit();
    k.wgmma_wait(0);
    store_fragment(k, out, tid, 128, acc);
    return k;
}

TEST(PtxHopperSimulator, TmaTilesFeedWgmmaAsAGemm) {
    std::size_t const m = 50, n = 120, kk = 56;  // smaller than the tiles: the TMA fills zeros
    for (bool b_transposed : {false, true}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(std::string(b_transposed ? "b [n, k]" : "b [k, n]") + " seed " + std::to_string(seed));
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        Buffer a(m * kk * 2), b(kk * n * 2), out(64 * 128 * 4);
        for (std::size_t i = 0; i < m * kk; ++i) a.set(i, bits16(Type::f16, dist(rng)));
        for (std::size_t i = 0; i < kk * n; ++i) b.set(i, bits16(Type::f16, dist(rng)));
        for (std::size_t i = 0; i < 64 * 128; ++i) out.set(i, poison);
        auto const element = [&](Buffer& buffer, std::size_t i) {
            return value16(Type::f16, buffer.get<std::uint16_t>(i));
        };

        Kernel const k = tma_wgmma_kernel(b_transposed);
        assembles(k, Target::sm_90a);
        SimulatedRunner runner;
        for (Buffer* buffer : {&a, &b, &out}) runner.allow(buffer->data(), buffer->bytes());
        TensorMap a_map = runner.encode_tensor_map({.address = a.address(),
                                                    .element = Type::f16,
                                                    .rank = 2,
                                                    .dims = {kk, m},
                                                    .strides = {0, kk * 2},
                                                    .box = {64, 64},
                                                    .swizzle = TensorMapSwizzle::swizzle_128b});
        TensorMap b_map = b_transposed ? runner.encode_tensor_map({.address = b.address(),
                                                                   .element = Type::f16,
                                                                   .rank = 2,
                                                                   .dims = {kk, n},
                                                                   .strides = {0, kk * 2},
                                                                   .box = {64, 128},
                                                                   .swizzle = TensorMapSwizzle::swizzle_128b})
                                       : runner.encode_tensor_map({.address = b.address(),
                                                                   .element = Type::f16,
                                                                   .rank = 2,
                                                                   .dims = {n, kk},
                                                                   .strides = {0, n * 2},
                                                                   .box = {64, 64},
                                                                   .swizzle = TensorMapSwizzle::swizzle_128b});
        runner.run(
            k.name(), [&] { return k; }, {.grid = {1, 1, 1}, .block = {128, 1, 1}}, a_map, b_map, out.address());

        double worst = 0;
        std::size_t unwritten = 0;
        for (std::size_t i = 0; i < 64; ++i)
            for (std::size_t j = 0; j < 128; ++j) {
                double want = 0, size = 0;
                if (i < m && j < n)
                    for (std::size_t p = 0; p < kk; ++p) {
                        double const prod = element(a, i * kk + p) * element(b, b_transposed ? j * kk + p : p * n + j);
                        want += prod, size += std::fabs(prod);
                    }
                float const got = out.get<float>(i * 128 + j);
                unwritten += got == poison;
                worst = std::max(worst, std::isfinite(got) ? std::fabs(got - want) / (size + 1e-30) : 1e30);
            }
        EXPECT_EQ(unwritten, 0u);
        EXPECT_LT(worst, 1e-6);
    }
}

// ---- parameters, maps, barriers, what is not simulated

TEST(PtxHopperSimulator, EncodeTensorMapChecksAsTheDriverDoes) {
    alignas(16) static std::uint8_t memory[1 << 12];
    auto const base = reinterpret_cast<std::uintptr_t>(memory);
    TensorMapSpec const good{.address = base,
                             .element = Type::f16,
                             .rank = 2,
                             .dims = {64, 16},
                             .strides = {0, 128},
                             .box = {64, 16},
                             .swizzle = TensorMapSwizzle::swizzle_128b};
    SimulatedRunner runner;
    EXPECT_TRUE(runner.encodes_tensor_maps());
    TensorMap const map = runner.encode_tensor_map(good);
    TensorMapSpec const back = ptxsim::decode_tensor_map(map);
    EXPECT_EQ(back.address, good.address);
    EXPECT_EQ(back.box, good.box);
    auto const refused = [&](auto change, char const* why) {
        TensorMapSpec s = good;
        change(s);
        EXPECT_THROW((void)runner.encode_tensor_map(s), SimulationError) << why;
    };
    refused([](TensorMapSpec& s) { s.rank = 0; }, "rank 0");
    refused([](TensorMapSpec& s) { s.rank = 6; }, "rank 6");
    refused([](TensorMapSpec& s) { s.address += 8; }, "address not 16-byte aligned");
    refused([](TensorMapSpec& s) { s.strides[1] = 136; }, "stride not a multiple of 16");
    refused([](TensorMapSpec& s) { s.box[1] = 257; }, "box beyond 256");
    refused([](TensorMapSpec& s) { s.box[1] = 0; }, "empty box");
    refused([](TensorMapSpec& s) { s.dims[0] = 0; }, "empty dimension");
    refused([](TensorMapSpec& s) { s.box[0] = 72; }, "144-byte rows with the 128-byte swizzle");
    refused(
        [](TensorMapSpec& s) {
            s.box[0] = 12;
            s.swizzle = TensorMapSwizzle::none;
        },
        "24-byte rows");
    refused(
        [](TensorMapSpec& s) {
            s.box[0] = 40;
            s.swizzle = TensorMapSwizzle::swizzle_64b;
        },
        "80-byte rows, 64-byte swizzle");
    refused(
        [](TensorMapSpec& s) {
            s.box[0] = 24;
            s.swizzle = TensorMapSwizzle::swizzle_32b;
        },
        "48-byte rows, 32-byte swizzle");
    refused([](TensorMapSpec& s) { s.element = Type::pred; }, "no element size");
    runner.set_encodes_tensor_maps(false);
    EXPECT_FALSE(runner.encodes_tensor_maps());
    EXPECT_THROW((void)runner.encode_tensor_map(good), Unsupported);
}

// A fresh barrier's wait for parity 1 returns at once (the phase before the first counts as
// completed: what a TMA producer's first wait for a free slot relies on); parity 0 after the first
// phase completes; and parity 0 on a fresh barrier without arrivals never returns.
TEST(PtxHopperSimulator, MbarrierParityOfAFreshBarrier) {
    auto const build = [](bool wait_first_phase_without_arrival) {
        Kernel k(wait_first_phase_without_arrival ? "mbarrier_stuck" : "mbarrier_parity");
        Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
        Reg const barrier = k.shared_address(k.shared_array("barrier", Type::b64, 1, 8));
        Reg const tid = k.special(Special::tid_x);
        Reg const leader = k.setp(Cmp::eq, tid, 0u);
        k.if_then(leader, [&] {
            k.mbarrier_init(barrier, 1u);
            k.fence_mbarrier_init();
        });
        k.bar_sync();
        if (wait_first_phase_without_arrival) k.mbarrier_wait(barrier, 0u);
        k.mbarrier_wait(barrier, 1u);
        k.st(Space::global, Type::u32, k.element_address(out, tid, 4), 1u);
        k.bar_sync();
        k.if_then(leader, [&] { k.mbarrier_arrive(barrier); });
        k.mbarrier_wait(barrier, 0u);
        k.st(Space::global, Type::u32, k.element_address(out, k.add(tid, 64u), 4), 2u);
        return k;
    };
    Kernel const k = build(false);
    assembles(k, Target::sm_90);
    std::vector<std::uint32_t> out(128, 0);
    Simulator sim(k);
    sim.allow(out.data(), out.size() * 4);
    sim.run({1, 1, 1}, {64, 1, 1}, std::vector<std::uint64_t>{ptxsim::param(out.data())});
    for (std::size_t i = 0; i < 64; ++i) {
        EXPECT_EQ(out[i], 1u) << "thread " << i << " past the parity-1 wait";
        EXPECT_EQ(out[64 + i], 2u) << "thread " << i << " past the parity-0 wait";
    }
    Kernel const stuck = build(true);
    Simulator stuck_sim(stuck);
    stuck_sim.allow(out.data(), out.size() * 4);
    expect_simulation_error(
        [&] {
            stuck_sim.run({1, 1, 1}, {64, 1, 1}, std::vector<std::uint64_t>{ptxsim::param(out.data())});
        },
        "deadlock", "a wait for the first phase without arrivals returned");
}

// Named barriers: warp 0 publishes a value and arrives at barrier 1 without waiting, warp 1 waits
// there for both warps, warp 2 never takes part; a count the warps cannot reach is a deadlock, and
// one barrier used with two counts at once an error.
TEST(PtxHopperSimulator, NamedBarriersCountTheirWarps) {
    auto const build = [](unsigned threads) {
        Kernel k("named_barrier_" + std::to_string(threads));
        Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
        Reg const cell = k.shared_address(k.shared_array("cell", Type::u32, 1, 4));
        Reg const tid = k.special(Special::tid_x);
        Reg const warp = k.shr(tid, 5u);
        Reg const at = k.element_address(out, tid, 4);
        k.if_then(k.setp(Cmp::eq, warp, 0u), [&] {
            k.st(Space::shared, Type::u32, Address(cell), 7u);
            k.bar_arrive(1, threads);
            k.st(Space::global, Type::u32, at, 1u);
        });
        k.if_then(k.setp(Cmp::eq, warp, 1u), [&] {
            k.bar_sync(1, threads);
            k.st(Space::global, Type::u32, at, k.ld(Space::shared, Type::u32, Address(cell)));
        });
        k.if_then(k.setp(Cmp::eq, warp, 2u), [&] { k.st(Space::global, Type::u32, at, 3u); });
        return k;
    };
    std::vector<std::uint32_t> out(96, 0);
    Kernel const k = build(64);
    assembles(k, Target::sm_90);
    Simulator sim(k);
    sim.allow(out.data(), out.size() * 4);
    sim.run({1, 1, 1}, {96, 1, 1}, std::vector<std::uint64_t>{ptxsim::param(out.data())});
    for (std::size_t i = 0; i < 96; ++i) EXPECT_EQ(out[i], i < 32 ? 1u : i < 64 ? 7u : 3u) << "thread " << i;
    Kernel const stuck = build(96);
    Simulator stuck_sim(stuck);
    stuck_sim.allow(out.data(), out.size() * 4);
    expect_simulation_error(
        [&] {
            stuck_sim.run({1, 1, 1}, {96, 1, 1}, std::vector<std::uint64_t>{ptxsim::param(out.data())});
        },
        "deadlock", "a barrier of 96 threads that 64 reach let its waiters go");
    Kernel mixed("named_barrier_mixed_counts");
    Reg const warp = mixed.shr(mixed.special(Special::tid_x), 5u);
    mixed.if_then_else(
        mixed.setp(Cmp::eq, warp, 0u), [&] { mixed.bar_arrive(1, 64); }, [&] { mixed.bar_sync(1, 96); });
    Simulator mixed_sim(mixed);
    expect_simulation_error(
        [&] {
            mixed_sim.run({1, 1, 1}, {96, 1, 1}, std::vector<std::uint64_t>{});
        },
        "used with", "barrier 1 taken with 64 and 96 threads at once");
}

// Parameters come from Kernel::parameters(): a tensor map among scalars, passed by value (the
// launch copies its bytes; its address is taken with mov and cvta.param), through both run()
// overloads; the cluster registers of a block that is its own cluster; a map that is not one.
Kernel parameter_kernel() {
    Kernel k("tensor_map_parameter");
    Reg const scale = k.param(Type::u32, "scale");
    Reg const map = k.tensor_map_param("map");
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    k.prefetch_tensor_map(map);
    k.st(Space::global, Type::u32, Address(out), scale);
    k.st(Space::global, Type::u32, Address(out, 4), k.special(Special::cluster_ctarank));
    k.st(Space::global, Type::u32, Address(out, 8), k.special(Special::cluster_nctarank));
    return k;
}

TEST(PtxHopperSimulator, TensorMapParametersAndClusterRegisters) {
    Kernel const k = parameter_kernel();
    assembles(k, Target::sm_90);
    EXPECT_NE(k.emit(Target::sm_90).find(".param .align 64 .b8 map[128]"), std::string::npos);
    auto const params = k.parameters();
    ASSERT_EQ(params.size(), 3u);
    EXPECT_EQ(params[1].bytes, 128u);
    EXPECT_EQ(params[1].type, Type::b8);

    alignas(16) static std::uint8_t memory[256];
    TensorMap valid = ptxsim::encode_tensor_map({.address = reinterpret_cast<std::uintptr_t>(memory),
                                                 .element = Type::f32,
                                                 .rank = 1,
                                                 .dims = {64},
                                                 .strides = {},
                                                 .box = {64}});
    std::vector<std::uint32_t> words(3, 99);
    SimulatedRunner runner;
    runner.allow(words.data(), words.size() * 4);
    runner.run(
        k.name(), [&] { return k; }, {.grid = {2, 1, 1}, .block = {32, 1, 1}}, std::uint32_t{7}, valid,
        ptxsim::param(words.data()));
    EXPECT_EQ(words, (std::vector<std::uint32_t>{7, 0, 1}));

    words.assign(3, 99);
    Simulator sim(k);
    sim.allow(words.data(), words.size() * 4);
    sim.run({1, 1, 1}, {1, 1, 1}, std::vector<std::uint64_t>{11, ptxsim::param(&valid), ptxsim::param(words.data())});
    EXPECT_EQ(words, (std::vector<std::uint32_t>{11, 0, 1}));
    // One value per declared parameter, the map included.
    EXPECT_THROW(sim.run({1, 1, 1}, {1, 1, 1}, std::vector<std::uint64_t>{11, ptxsim::param(words.data())}),
                 SimulationError)
        << "a parameter missing";
    // 128 bytes that are not a map (all zeros: rank 0) are refused where the kernel uses them.
    TensorMap const zeros;
    expect_simulation_error(
        [&] {
            sim.run({1, 1, 1}, {1, 1, 1},
                    std::vector<std::uint64_t>{11, ptxsim::param(&zeros), ptxsim::param(words.data())});
        },
        "prefetch.tensormap", "ran with a map of zeros");
}

void expect_not_simulated(Kernel const& k, std::vector<std::uint64_t> const& params, Dim3 block = {1, 1, 1}) {
    SCOPED_TRACE(k.name());
    expect_simulation_error(
        [&] {
            Simulator sim(k);
            sim.run({1, 1, 1}, {block.x, block.y, block.z}, params);
        },
        "not simulated", "ran");
}

TEST(PtxHopperSimulator, ClustersAreNotSimulated) {
    alignas(16) static std::uint8_t memory[4096];
    TensorMap map = ptxsim::encode_tensor_map({.address = reinterpret_cast<std::uintptr_t>(memory),
                                               .element = Type::f16,
                                               .rank = 2,
                                               .dims = {64, 16},
                                               .strides = {0, 128},
                                               .box = {64, 16},
                                               .swizzle = TensorMapSwizzle::swizzle_128b});
    {
        Kernel k("tma_multicast");
        Reg const m = k.tensor_map_param("map");
        Reg const tile = k.shared_address(k.shared_array("tile", Type::b8, 2048, 1024));
        Reg const barrier = k.shared_address(k.shared_array("barrier", Type::b64, 1, 8));
        k.mbarrier_init(barrier, 1u);
        k.mbarrier_arrive_expect_tx(barrier, 2048u);
        Reg const zero = k.mov(Type::s32, 0);
        std::array const at{zero, zero};
        k.tma_load(tile, m, at, barrier, k.mov(Type::u16, 1));
        k.mbarrier_wait(barrier, 0u);
        assembles(k, Target::sm_90a);  // the multicast form is sm_90a's
        expect_not_simulated(k, {ptxsim::param(&map)});
    }
    {
        Kernel k("cluster_barrier");
        k.barrier_cluster_arrive();
        k.barrier_cluster_wait();
        assembles(k, Target::sm_90);
        expect_not_simulated(k, {});
    }
    {
        Kernel k("cluster_mapa");
        Reg const barrier = k.shared_address(k.shared_array("barrier", Type::b64, 1, 8));
        k.mbarrier_init(barrier, 1u);
        k.mbarrier_arrive_cluster(k.mapa_shared(barrier, 0u));
        assembles(k, Target::sm_90);
        expect_not_simulated(k, {});
    }
    {
        Kernel k("cluster_of_two");
        k.cluster_dims(2, 1, 1);
        Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
        k.st(Space::global, Type::u32, Address(out), 1u);
        assembles(k, Target::sm_90);
        std::uint32_t word = 0;
        expect_not_simulated(k, {ptxsim::param(&word)});
    }
}

// setmaxnreg and the wgmma bookkeeping of a warpgroup that issues no MMA; a wgmma in a block that
// is not whole warpgroups is refused.
TEST(PtxHopperSimulator, WarpgroupBookkeeping) {
    Kernel k("warpgroup_bookkeeping");
    k.max_registers(168);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const tid = k.special(Special::tid_x);
    k.if_then_else(
        k.setp(Cmp::lt, tid, 128u), [&] { k.setmaxnreg(RegisterChange::decrease, 40); },
        [&] { k.setmaxnreg(RegisterChange::increase, 232); });
    k.wgmma_fence();
    k.wgmma_commit();
    k.wgmma_wait(0);
    k.fence_proxy_async_shared();
    k.st(Space::global, Type::u32, k.element_address(out, tid, 4), tid);
    assembles(k, Target::sm_90a);
    std::vector<std::uint32_t> words(256, 12345);
    Simulator sim(k);
    sim.allow(words.data(), words.size() * 4);
    sim.run({1, 1, 1}, {256, 1, 1}, std::vector<std::uint64_t>{ptxsim::param(words.data())});
    for (std::uint32_t i = 0; i < 256; ++i) EXPECT_EQ(words[i], i);
    EXPECT_THROW(sim.run({1, 1, 1}, {96, 1, 1}, std::vector<std::uint64_t>{ptxsim::param(words.data())}),
                 SimulationError);
}

}  // namespace
}  // namespace rayo::test
