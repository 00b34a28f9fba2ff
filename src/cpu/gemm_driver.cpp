#include "cpu/gemm_driver.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <string>

#include "cpu/scratch_buffer.hpp"
#include "cpu/thread_pool.hpp"

namespace rayo::cpu {

namespace {

struct CacheSizes {
    std::size_t l1d = 32 * 1024;
    std::size_t l2 = 512 * 1024;
    std::size_t l3 = 8 * 1024 * 1024;  // per socket; shared by the threads
};

// "32K" / "512K" / "32768K" / "8M" -> bytes; 0 when unreadable.
std::size_t parse_cache_size(std::string const& text) {
    char* end = nullptr;
    unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (end == text.c_str()) return 0;
    if (*end == 'K' || *end == 'k') value *= 1024;
    if (*end == 'M' || *end == 'm') value *= 1024 * 1024;
    return static_cast<std::size_t>(value);
}

std::string read_line(std::string const& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// sysfs first (sysconf's numbers are made up on some VMs and non-glibc systems), then sysconf,
// then the defaults above.
CacheSizes detect_cache_sizes() {
    CacheSizes sizes;
    bool found_l1 = false, found_l2 = false, found_l3 = false;
    for (int index = 0; index < 8; ++index) {
        std::string const dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        std::string const level = read_line(dir + "level");
        if (level.empty()) break;
        std::string const type = read_line(dir + "type");
        std::size_t const size = parse_cache_size(read_line(dir + "size"));
        if (size == 0 || type == "Instruction") continue;
        if (level == "1") sizes.l1d = size, found_l1 = true;
        if (level == "2") sizes.l2 = size, found_l2 = true;
        if (level == "3") sizes.l3 = size, found_l3 = true;
    }
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    auto from_sysconf = [](int name, std::size_t& out, bool found) {
        long const value = sysconf(name);
        if (!found && value > 0) out = static_cast<std::size_t>(value);
    };
    from_sysconf(_SC_LEVEL1_DCACHE_SIZE, sizes.l1d, found_l1);
    from_sysconf(_SC_LEVEL2_CACHE_SIZE, sizes.l2, found_l2);
    from_sysconf(_SC_LEVEL3_CACHE_SIZE, sizes.l3, found_l3);
#endif
    // Keep absurd values from producing absurd blocks.
    sizes.l1d = std::clamp<std::size_t>(sizes.l1d, 16 * 1024, 128 * 1024);
    sizes.l2 = std::clamp<std::size_t>(sizes.l2, 128 * 1024, 4 * 1024 * 1024);
    sizes.l3 = std::clamp<std::size_t>(sizes.l3, sizes.l2, 256 * 1024 * 1024);
    return sizes;
}

CacheSizes const& cache_sizes() {
    static CacheSizes const sizes = detect_cache_sizes();
    return sizes;
}

std::size_t round_down(std::size_t value, std::size_t multiple) { return value / multiple * multiple; }
std::size_t round_up(std::size_t value, std::size_t multiple) { return (value + multiple - 1) / multiple * multiple; }
std::size_t ceil_div(std::size_t value, std::size_t divisor) { return (value + divisor - 1) / divisor; }

// Each pool thread's packed panels.
thread_local ScratchBuffer packed_a_buffer;
thread_local ScratchBuffer packed_b_buffer;

// Products up to this many multiply-adds, or so narrow that each packed A panel would be used at
// most twice, read an f32 A in place: packing it would cost more than it saves.
constexpr std::size_t direct_max_volume = 96 * 96 * 96;
// Each thread should get at least this many flops, or waking it costs more than it brings.
constexpr double flops_per_thread = 1 << 21;

struct Range {
    std::size_t begin = 0, end = 0;
};

// One thread's share of C: rows x cols, computed serially with this thread's pack buffers.
void gemm_region(GemmArgs const& args, KernelTable const& kt, GemmBlocking const& blocking, Range rows, Range cols,
                 bool direct_a) {
    std::size_t const mr = kt.gemm_mr, nr = kt.gemm_nr;
    // Equal depth blocks: k = 257 as 256 + 1 would pay a whole extra pass over C for one step.
    std::size_t kc_max = round_up(ceil_div(args.k, ceil_div(args.k, blocking.kc)), 4);
    // Quantized B is decoded 256 values (whole blocks) at a time (args.k is whole blocks).
    if (is_quantized(args.b_type))
        kc_max = std::max<std::size_t>(1, blocking.kc / quant_block_values) * quant_block_values;
    std::size_t nc_max = std::min(blocking.nc, round_up(cols.end - cols.begin, nr));
    if (direct_a) {
        // Here the A micro-panel sits in L1 and the packed B block must stay in L2.
        nc_max = std::min(nc_max, std::max(nr, round_down(cache_sizes().l2 / 2 / (kc_max * sizeof(float)), nr)));
    }
    std::size_t const mc_max = std::min(blocking.mc, round_up(rows.end - rows.begin, mr));
    float* const packed_b = packed_b_buffer.get(kc_max * round_up(nc_max, nr));
    float* const packed_a = direct_a ? nullptr : packed_a_buffer.get(kc_max * round_up(mc_max, mr));

    for (std::size_t jc = cols.begin; jc < cols.end; jc += nc_max) {
        std::size_t const nc = std::min(nc_max, cols.end - jc);
        for (std::size_t pc = 0; pc < args.k; pc += kc_max) {
            std::size_t const kc = std::min(kc_max, args.k - pc);
            bool const accumulate = pc > 0;  // the first depth block overwrites C
            kt.gemm_pack_b(args, pc, kc, jc, nc, packed_b);
            if (direct_a) {
                for (std::size_t i = rows.begin; i < rows.end; i += mr) {
                    std::size_t const mr_used = std::min(mr, rows.end - i);
                    for (std::size_t jr = 0; jr < nc; jr += nr) {
                        kt.gemm_micro_direct_a(args, i, pc, kc, packed_b + jr * kc, args.c + i * args.ldc + jc + jr,
                                               args.ldc, mr_used, std::min(nr, nc - jr), accumulate);
                    }
                }
                continue;
            }
            for (std::size_t ic = rows.begin; ic < rows.end; ic += mc_max) {
                std::size_t const mc = std::min(mc_max, rows.end - ic);
                kt.gemm_pack_a(args, ic, mc, pc, kc, packed_a);
                // B micro-panel outer so it stays in L1 while the A block streams from L2.
                for (std::size_t jr = 0; jr < nc; jr += nr) {
                    std::size_t const nr_used = std::min(nr, nc - jr);
                    float const* b_panel = packed_b + jr * kc;
                    float* c_column = args.c + jc + jr;
                    for (std::size_t ir = 0; ir < mc; ir += mr) {
                        kt.gemm_micro(kc, packed_a + ir * kc, b_panel, c_column + (ic + ir) * args.ldc, args.ldc,
                                      std::min(mr, mc - ir), nr_used, accumulate);
                    }
                }
            }
        }
    }
}

// Splits an m_tiles x n_tiles grid of micro-tiles over at most `threads` threads as a
// row_parts x col_parts grid, minimising the busiest thread's compute plus packing.
struct Split {
    std::size_t row_parts = 1, col_parts = 1;
};
Split split_work(std::size_t m_tiles, std::size_t n_tiles, std::size_t mr, std::size_t nr, std::size_t threads) {
    Split best;
    double best_cost = -1.0;
    for (std::size_t row_parts = 1; row_parts <= std::min(threads, m_tiles); ++row_parts) {
        std::size_t const col_parts = std::min(threads / row_parts, n_tiles);
        double const rows = static_cast<double>(ceil_div(m_tiles, row_parts) * mr);
        double const cols = static_cast<double>(ceil_div(n_tiles, col_parts) * nr);
        // Per unit depth: rows·cols multiply-adds at ~16 per cycle vs ~1 cycle per packed element.
        double const cost = rows * cols / 16.0 + rows + cols;
        if (best_cost < 0.0 || cost < best_cost) {
            best_cost = cost;
            best = {row_parts, col_parts};
        }
    }
    return best;
}

void zero_c(GemmArgs const& args) {
    for (std::size_t i = 0; i < args.m; ++i) std::memset(args.c + i * args.ldc, 0, args.n * sizeof(float));
}

}  // namespace

GemmBlocking gemm_blocking(std::size_t mr, std::size_t nr, std::size_t threads) {
    CacheSizes const& caches = cache_sizes();
    GemmBlocking b;
    // kc: a B micro-panel (kc x nr) takes half of L1, leaving room for the A micro-panel and C.
    b.kc = std::clamp<std::size_t>(round_down(caches.l1d / 2 / (nr * sizeof(float)), 8), 64, 512);
    // mc: the packed A block (mc x kc) takes under a third of L2, leaving room for the B
    // micro-panels and C tiles that stream through it.
    b.mc = std::clamp<std::size_t>(round_down(caches.l2 * 3 / 10 / (b.kc * sizeof(float)), mr), mr, 1024 / mr * mr);
    // nc: every thread's packed B panel (kc x nc) together take about half of L3; capped so
    // packing stays incremental, and floored since each column block repacks A.
    std::size_t const l3_share = caches.l3 / 2 / std::max<std::size_t>(threads, 1);
    b.nc = std::clamp<std::size_t>(round_down(l3_share / (b.kc * sizeof(float)), nr), round_up(512, nr),
                                   std::max(round_up(512, nr), round_down(4096, nr)));
    return b;
}

void gemm(GemmArgs const& args, KernelTable const& kt) {
    if (args.m == 0 || args.n == 0) return;
    if (args.k == 0) {
        zero_c(args);
        return;
    }
    std::size_t const mr = kt.gemm_mr, nr = kt.gemm_nr;
    double const volume = static_cast<double>(args.m) * static_cast<double>(args.n) * static_cast<double>(args.k);
    bool const direct_a = kt.gemm_micro_direct_a != nullptr && args.a_type == GemmType::f32 &&
                          (volume <= static_cast<double>(direct_max_volume) || args.n <= 2 * nr);

    std::size_t const m_tiles = ceil_div(args.m, mr), n_tiles = ceil_div(args.n, nr);
    std::shared_ptr<ThreadPool> const pool_lease = thread_pool();  // held until the product is done
    ThreadPool& pool = *pool_lease;
    std::size_t const wanted = static_cast<std::size_t>(std::max(1.0, 2.0 * volume / flops_per_thread));
    std::size_t const threads = std::min({pool.size(), wanted, m_tiles * n_tiles});
    Split const split = split_work(m_tiles, n_tiles, mr, nr, threads);
    std::size_t const parts = split.row_parts * split.col_parts;
    GemmBlocking const blocking = gemm_blocking(mr, nr, parts);

    auto region = [&](std::size_t part) {
        std::size_t const row_part = part / split.col_parts, col_part = part % split.col_parts;
        Range const rows{std::min(args.m, m_tiles * row_part / split.row_parts * mr),
                         std::min(args.m, m_tiles * (row_part + 1) / split.row_parts * mr)};
        Range const cols{std::min(args.n, n_tiles * col_part / split.col_parts * nr),
                         std::min(args.n, n_tiles * (col_part + 1) / split.col_parts * nr)};
        if (rows.begin < rows.end && cols.begin < cols.end) gemm_region(args, kt, blocking, rows, cols, direct_a);
    };
    if (parts <= 1) {
        region(0);
        return;
    }
    // Regions are claimed, not assigned: a worker that wakes late (an oversubscribed machine)
    // finds its region already done by whoever was free, instead of stalling the caller.
    std::atomic<std::size_t> next_region{0};
    pool.run_parts(parts, [&](std::size_t, std::size_t) {
        for (std::size_t part = next_region.fetch_add(1); part < parts; part = next_region.fetch_add(1)) region(part);
    });
}

}  // namespace rayo::cpu
