// The CUDA backend's runtime: discovery, transfers, fills and copies at any byte offset, memory
// reuse, out-of-memory, concurrency and the module cache with hand-written PTX. The device tests
// skip with a message where there is no CUDA device; the discovery test runs everywhere.
#include "support/cuda_support.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "cuda/driver_api.hpp"

namespace rayo::test {
namespace {

using CudaDevice = CudaTest;
using CudaModuleCache = CudaTest;

bool libcuda_loadable() {
    void* library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!library) return false;
    dlclose(library);
    return true;
}

TEST(CudaDiscovery, WithoutTheDriverThereAreNoCudaDevicesAndNothingElseChanges) {
    if (libcuda_loadable()) GTEST_SKIP() << "libcuda.so.1 is present on this machine";
    std::vector<Device> all;
    ASSERT_NO_THROW(all = Device::all());
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.front(), Device::cpu());
    for (Device d : all) EXPECT_NE(d.kind(), DeviceKind::cuda) << d.id();
    try {
        (void)Device::parse("cuda");
        ADD_FAILURE() << "Device::parse(\"cuda\") found a device";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("no such device"), std::string::npos) << e.what();
    }
    // Why there is none, as the debug log says it.
    try {
        (void)cuda::Driver::get();
        ADD_FAILURE() << "the driver loaded";
    } catch (DeviceError const& e) {
        EXPECT_NE(std::string(e.what()).find("libcuda.so.1"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cuda::Driver::loaded(), nullptr);
    if (!std::getenv("RAYO_DEVICE")) {
        EXPECT_NE(Device::best().kind(), DeviceKind::cuda);
    }
    auto const v = random_floats(33, fresh_seed());
    EXPECT_EQ(add(Tensor<float>::from(v, {v.size()}), 0.0f).to_vector(), v);
}

TEST_F(CudaDevice, EnumeratesEveryDeviceWithNameMemoryAndArchitecture) {
    int expected_index = 0;
    bool seen_vulkan = false;
    for (Device d : Device::all()) {
        if (d.kind() == DeviceKind::vulkan) seen_vulkan = true;
        if (d.kind() != DeviceKind::cuda) continue;
        EXPECT_FALSE(seen_vulkan) << "CUDA devices are listed before Vulkan ones";
        EXPECT_EQ(d.index(), expected_index++);
        EXPECT_EQ(d.id(), "cuda:" + std::to_string(d.index()));
        EXPECT_EQ(Device::parse(d.id()), d);
        std::string const name = d.name();
        EXPECT_NE(name.find("GiB"), std::string::npos) << name;
        EXPECT_NE(name.find("sm_"), std::string::npos) << name;
        auto& b = dynamic_cast<cuda::CudaBackend&>(detail::DeviceRegistry::instance().backend(d));
        EXPECT_TRUE(b.is_discrete_gpu());
        EXPECT_FALSE(b.is_software());
        EXPECT_GE(b.compute_capability(), 50) << name;
        EXPECT_GT(b.multiprocessor_count(), 0) << name;
        EXPECT_NE(name.find("sm_" + std::to_string(b.compute_capability())), std::string::npos) << name;
    }
    EXPECT_EQ(Device::parse("cuda"), device);
}

TEST_F(CudaDevice, BestPicksCuda) {
    if (std::getenv("RAYO_DEVICE")) GTEST_SKIP() << "RAYO_DEVICE overrides best()";
    EXPECT_EQ(Device::best(), device) << Device::best().name();
}

// The index of the first byte that differs, or npos.
std::size_t first_difference(std::vector<std::byte> const& a, std::vector<std::byte> const& b) {
    auto const [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    return ia == a.end() && ib == b.end() ? std::string::npos : static_cast<std::size_t>(ia - a.begin());
}

std::vector<std::byte> random_bytes(std::size_t n, std::mt19937& rng) {
    std::vector<std::byte> v(n);
    for (auto& b : v) b = static_cast<std::byte>(rng() & 0xff);
    return v;
}

TEST_F(CudaDevice, TransfersFillsAndCopiesAtOddOffsetsAndSizes) {
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    // Larger than the pinned staging chunks, so transfers are cut into pieces.
    std::size_t const size = 3 * cuda::PinnedStaging::chunk_bytes + 12'345;
    std::vector<std::byte> model(size, std::byte{0xA5});  // poison
    DeviceBuffer buffer(*backend, size);
    backend->upload(buffer.handle(), 0, model.data(), size);

    auto expect_device_matches_model = [&](std::string const& step) {
        std::vector<std::byte> got(size, std::byte{0x5A});
        backend->download(buffer.handle(), 0, got.data(), size);
        std::size_t const at = first_difference(got, model);
        EXPECT_EQ(at, std::string::npos) << step << ": first difference at byte " << at << " of " << size;
    };
    expect_device_matches_model("initial upload");

    struct Range {
        std::size_t offset, bytes;
    };
    Range const uploads[] = {{1, 1},
                             {3, 7},
                             {4097, 65'537},
                             {13, cuda::PinnedStaging::chunk_bytes + 5},
                             {7, 2 * cuda::PinnedStaging::chunk_bytes + 3},
                             {size - 3, 3}};
    for (Range r : uploads) {
        auto const data = random_bytes(r.bytes, rng);
        backend->upload(buffer.handle(), r.offset, data.data(), r.bytes);
        std::copy(data.begin(), data.end(), model.begin() + static_cast<std::ptrdiff_t>(r.offset));
    }
    expect_device_matches_model("uploads");

    // Partial downloads leave the bytes around them untouched.
    for (Range r : {Range{0, 1}, Range{5, 3}, Range{999, 70'001}, Range{11, cuda::PinnedStaging::chunk_bytes + 77}}) {
        std::vector<std::byte> host(r.bytes + 2, std::byte{0x3C});
        backend->download(buffer.handle(), r.offset, host.data() + 1, r.bytes);
        EXPECT_EQ(host.front(), std::byte{0x3C});
        EXPECT_EQ(host.back(), std::byte{0x3C});
        std::vector<std::byte> const got(host.begin() + 1, host.end() - 1);
        std::vector<std::byte> const want(model.begin() + static_cast<std::ptrdiff_t>(r.offset),
                                          model.begin() + static_cast<std::ptrdiff_t>(r.offset + r.bytes));
        EXPECT_EQ(first_difference(got, want), std::string::npos) << "download at " << r.offset << " of " << r.bytes;
    }

    // Fills of every pattern size at every alignment, with distinct bytes (the word memsets with
    // a rotated pattern) and equal bytes (a byte memset). Only whole patterns are written.
    for (std::size_t pattern_bytes : {1u, 2u, 4u, 8u}) {
        for (bool equal_bytes : {false, true}) {
            std::array<std::byte, 8> pattern{};
            for (std::size_t i = 0; i < pattern_bytes; ++i)
                pattern[i] =
                    equal_bytes ? std::byte{0} : static_cast<std::byte>((0x11 * (i + 1) + (rng() & 0x0f)) & 0xff);
            for (Range r :
                 {Range{0, pattern_bytes}, Range{1, 3 * pattern_bytes}, Range{3, 1000 * pattern_bytes + 1},
                  Range{5, 100'001 * pattern_bytes}, Range{6, 7}, Range{4, 64 * pattern_bytes + pattern_bytes - 1}}) {
                backend->fill(buffer.handle(), r.offset, r.bytes, pattern.data(), pattern_bytes);
                for (std::size_t i = 0; i + pattern_bytes <= r.bytes; i += pattern_bytes)
                    std::copy_n(pattern.begin(), pattern_bytes,
                                model.begin() + static_cast<std::ptrdiff_t>(r.offset + i));
            }
            expect_device_matches_model("fills with a " + std::to_string(pattern_bytes) + "-byte pattern" +
                                        (equal_bytes ? " of equal bytes" : ""));
        }
    }

    // Copies: disjoint, overlapping either way (a memmove), onto themselves, and between buffers.
    auto copy = [&](std::size_t from, std::size_t to, std::size_t bytes) {
        backend->copy(buffer.handle(), from, buffer.handle(), to, bytes);
        std::vector<std::byte> const moved(model.begin() + static_cast<std::ptrdiff_t>(from),
                                           model.begin() + static_cast<std::ptrdiff_t>(from + bytes));
        std::copy(moved.begin(), moved.end(), model.begin() + static_cast<std::ptrdiff_t>(to));
    };
    copy(11, 1'000'003, 77'777);
    copy(101, 150, 1001);
    copy(150, 101, 1001);
    copy(3, 3, 4096);
    copy(1, size - 2, 1);
    expect_device_matches_model("copies");
    DeviceBuffer other(*backend, 4099);
    backend->copy(buffer.handle(), 17, other.handle(), 1, 4097);
    std::vector<std::byte> got(4097);
    backend->download(other.handle(), 1, got.data(), got.size());
    EXPECT_EQ(first_difference(got, {model.begin() + 17, model.begin() + 17 + 4097}), std::string::npos);
}

TEST_F(CudaDevice, RejectsUnknownHandlesAndRangesOutsideTheBuffer) {
    DeviceBuffer buffer(*backend, 64);
    std::array<std::byte, 65> host{};
    try {
        backend->upload(buffer.handle(), 1, host.data(), 64);
        ADD_FAILURE() << "no exception";
    } catch (Error const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find("64 bytes at offset 1"), std::string::npos) << what;
        EXPECT_NE(what.find(device.id()), std::string::npos) << what;
    }
    EXPECT_THROW(backend->download(buffer.handle() + 1, 0, host.data(), 1), Error);
    // Zero-byte buffers are distinct, valid handles.
    DeviceBuffer empty_a(*backend, 0), empty_b(*backend, 0);
    EXPECT_NE(empty_a.handle(), empty_b.handle());
    backend->upload(empty_a.handle(), 0, host.data(), 0);
    EXPECT_THROW(backend->upload(empty_a.handle(), 0, host.data(), 1), Error);
}

TEST_F(CudaDevice, RoundTripsTensors) {
    auto const v = random_floats(100'003, fresh_seed());
    auto t = Tensor<float>::from(v, {v.size()}, device);
    EXPECT_EQ(t.to_vector(), v);
    EXPECT_EQ(t.clone().to_vector(), v);
    EXPECT_EQ(t.to(Device::cpu()).to(device).to_vector(), v);
    auto s = Tensor<float>::from(std::vector<float>(v.begin(), v.begin() + 100'000), {1000, 100}, device).slice(3, 7);
    EXPECT_EQ(s.to_vector(), std::vector<float>(v.begin() + 300, v.begin() + 700));
    EXPECT_EQ(Tensor<float>::full({37}, 2.5f, device).to_vector(), std::vector<float>(37, 2.5f));
    EXPECT_EQ(Tensor<float>::zeros({5}, device).to_vector(), std::vector<float>(5, 0.0f));
    EXPECT_EQ(Tensor<half>::full({9}, half(1.5f), device).to_vector(), std::vector<half>(9, half(1.5f)));
    std::vector<std::int32_t> ints{1, -2, 3};
    EXPECT_EQ(Tensor<std::int32_t>::from(ints, {3}, device).to_vector(), ints);
}

TEST_F(CudaDevice, ReusesMemoryForTenThousandTensors) {
    auto const v = random_floats(1000, fresh_seed());
    { auto warm = Tensor<float>::from(v, {v.size()}, device); }
    device.synchronize();
    auto const before = backend->memory_stats();
    for (int i = 0; i < 10'000; ++i) {
        auto t = Tensor<float>::from(v, {v.size()}, device);  // allocated, uploaded and freed in stream order
        if (i % 1000 == 0) {
            EXPECT_EQ(t.to_vector(), v);
        }
    }
    device.synchronize();
    auto const after = backend->memory_stats();
    EXPECT_EQ(after.live_buffers, before.live_buffers);
    EXPECT_EQ(after.pool.used_bytes, before.pool.used_bytes);
    EXPECT_LE(after.pool.reserved_bytes, before.pool.reserved_bytes)
        << "the pool grew from " << before.pool.reserved_bytes << " to " << after.pool.reserved_bytes << " bytes";
}

TEST_F(CudaDevice, OutOfMemoryIsClearAndRecoverable) {
    auto const stats = backend->memory_stats();
    auto expect_out_of_memory = [&](std::size_t elements) {
        std::size_t const bytes = elements * sizeof(float);
        try {
            (void)Tensor<float>::empty({elements}, device);
            ADD_FAILURE() << "no exception for " << bytes << " bytes";
        } catch (OutOfMemory const& e) {
            std::string const what = e.what();
            EXPECT_NE(what.find(std::to_string(bytes)), std::string::npos) << what;
            EXPECT_NE(what.find(std::to_string(stats.device.total_bytes)), std::string::npos) << what;
            EXPECT_NE(what.find("free"), std::string::npos) << what;
            EXPECT_NE(what.find(device.id()), std::string::npos) << what;
        }
    };
    // More than the device has (refused up front), and all of it (refused by the driver: the
    // context itself takes some).
    expect_out_of_memory((stats.device.total_bytes + (std::size_t{1} << 30)) / sizeof(float));
    expect_out_of_memory(stats.device.total_bytes / sizeof(float));
    auto const v = random_floats(4096, fresh_seed());
    EXPECT_EQ(Tensor<float>::from(v, {v.size()}, device).to_vector(), v);
    auto big = Tensor<float>::full({std::size_t{1} << 26}, 1.0f, device);  // 256 MiB still fits
    EXPECT_EQ(big.slice(0, 4).to_vector(), std::vector<float>(4, 1.0f));
    EXPECT_EQ(backend->memory_stats().live_buffers, stats.live_buffers + 1);
}

TEST_F(CudaDevice, FourThreadsShareOneDevice) {
    std::vector<std::thread> threads;
    std::vector<int> failures(4, 0);
    std::vector<std::string> errors(4);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            auto const slot = static_cast<std::size_t>(t);
            try {
                auto const v = random_floats(257, static_cast<std::uint32_t>(t) + 1);
                auto x = Tensor<float>::from(v, {v.size()}, device);
                for (int i = 0; i < 1000; ++i) {
                    x = x.clone();  // a device copy into a fresh allocation
                    if (i % 10 == 9) {
                        float const value = static_cast<float>(t * 1000 + i);
                        if (Tensor<float>::full({31}, value, device).to_vector() != std::vector<float>(31, value))
                            ++failures[slot];
                    }
                    if (i % 100 == 99) x = add(x, 0.0f);  // an op: a kernel, or the CPU where there is none
                    if (i % 250 == 249 && x.to_vector() != v) ++failures[slot];
                }
            } catch (std::exception const& e) {
                errors[slot] = e.what();
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures, std::vector<int>(4, 0));
    EXPECT_EQ(errors, std::vector<std::string>(4));
}

// On sm_90 every kernel is launched to start early and waits for the grid before it: a chain in
// which each op reads what the one before wrote, and overwrites what an earlier one read, must
// still give exactly what the ops give one at a time. The kernels are long (64 MB each) so that the
// host queues them well ahead of the GPU: a kernel that did not wait would then run beside the one
// before it.
TEST_F(CudaDevice, KernelsStartingEarlyStillSeeTheWorkQueuedBeforeThem) {
    std::size_t const n = std::size_t{1} << 24;
    std::vector<float> want = random_floats(n, fresh_seed(), -1.0f, 1.0f);
    auto a = Tensor<float>::from(want, {n}, device);
    auto b = poisoned({n}, device);
    std::vector<Tensor<float>> sums;
    std::vector<double> want_sums, magnitudes;
    for (int step = 0; step < 12; ++step) {
        sums.push_back(sum(a));  // read by the reduction, then overwritten two kernels later
        double total = 0, magnitude = 0;
        for (float v : want) {
            total += v;
            magnitude += std::abs(v);
        }
        want_sums.push_back(total);
        magnitudes.push_back(magnitude);
        add_into(a, 1.0f, b);
        mul_into(b, 0.5f, a);
        for (float& v : want) v = (v + 1.0f) * 0.5f;  // the same two f32 roundings
    }

    // The one-row K-quant GEMV lets the next kernel start as soon as its own blocks have (it
    // prefetches its weights while the kernel before it runs): the add after it must still read
    // its output, and the sign flip after that must not reach the x it reads. Queued behind a long
    // kernel, these run back to back on the GPU; with k = 14336 the GEMV leaves room on every
    // multiprocessor for the add's blocks beside its own.
    struct GemvShape {
        std::size_t out, k;
    };
    for (GemvShape const shape : {GemvShape{1024, 14336}, GemvShape{8192, 4096}}) {
        auto const w = quantize<q4_k>(Tensor<float>::from(random_floats(shape.out * shape.k, fresh_seed(), -1.0f, 1.0f),
                                                          {shape.out, shape.k}))
                           .to(device);
        auto x = Tensor<float>::from(random_floats(shape.k, fresh_seed(), -1.0f, 1.0f), {1, shape.k}, device);
        std::vector<Tensor<float>> ys, zs;
        for (int step = 0; step < 16; ++step) {
            ys.push_back(poisoned({1, shape.out}, device));
            zs.push_back(poisoned({1, shape.out}, device));
        }
        mul_into(a, 1.0f, b);  // a long kernel for the GEMVs to queue behind
        for (std::size_t step = 0; step < ys.size(); ++step) {
            linear_into(x, w, ys[step]);
            add_into(ys[step], 1.0f, zs[step]);
            mul_into(x, -1.0f, x);
        }
        std::vector<float> const first = ys[0].to_vector();
        for (std::size_t i = 0; i < ys.size(); ++i) {
            std::vector<float> const y = ys[i].to_vector(), z = zs[i].to_vector();
            std::vector<float> y_plus_one(y.size());
            std::transform(y.begin(), y.end(), y_plus_one.begin(), [](float v) { return v + 1.0f; });
            EXPECT_EQ(z, y_plus_one) << shape.out << "x" << shape.k << ", step " << i;
            if (i % 2 == 0) {
                EXPECT_EQ(y, first) << shape.out << "x" << shape.k << ", step " << i;  // x as at first
            }
            EXPECT_TRUE(std::none_of(y.begin(), y.end(), [](float v) { return v == poison || !std::isfinite(v); }));
        }
    }

    EXPECT_EQ(a.to_vector(), want);
    for (std::size_t i = 0; i < sums.size(); ++i) {
        double const got = sums[i].to_vector().at(0);
        // An f32 sum of 2^24 terms: within 24 roundings of each partial sum, bounded by the Σ|v|.
        EXPECT_NEAR(got, want_sums[i], 4e-6 * magnitudes[i]) << "step " << i;
    }
}

// Writes 2 * i into out[i] for i < n.
constexpr char const* twice_ptx = R"(.version 8.0
.target sm_80
.address_size 64

.visible .entry twice(
    .param .u64 out,
    .param .u32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    shl.b32 %r6, %r5, 1;
    st.global.u32 [%rd4], %r6;
DONE:
    ret;
}
)";

// Each thread stores 3 * tid at smem[offset + 4 * tid], reads it back after a barrier and writes
// it to out[tid]: with offset near the end of a large dynamic shared allocation.
constexpr char const* shared_echo_ptx = R"(.version 8.0
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 smem[];

.visible .entry shared_echo(
    .param .u64 out,
    .param .u32 offset
)
{
    .reg .b32 %r<7>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [offset];
    mov.u32 %r2, %tid.x;
    shl.b32 %r3, %r2, 2;
    add.u32 %r3, %r3, %r1;
    mov.u32 %r4, smem;
    add.u32 %r4, %r4, %r3;
    mul.lo.u32 %r5, %r2, 3;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    ld.shared.u32 %r6, [%r4];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r6;
    ret;
}
)";

std::vector<std::uint32_t> download_u32(detail::Backend& backend, DeviceBuffer const& buffer, std::size_t n) {
    std::vector<std::uint32_t> out(n);
    backend.download(buffer.handle(), 0, out.data(), n * sizeof(std::uint32_t));
    return out;
}

TEST_F(CudaModuleCache, LoadsOnceAndLaunches) {
    if (backend->compute_capability() < 80) GTEST_SKIP() << "the test's PTX targets sm_80";
    std::size_t const modules_before = backend->modules().module_count();
    int generated = 0;
    auto make_ptx = [&] {
        ++generated;
        return std::string(twice_ptx);
    };
    cuda::CUfunction const f = backend->modules().function("test/twice", "twice", make_ptx);
    EXPECT_EQ(backend->modules().function("test/twice", "twice", make_ptx), f);
    EXPECT_EQ(generated, 1);
    EXPECT_EQ(backend->modules().module_count(), modules_before + 1);

    std::uint32_t const n = 100'003;
    DeviceBuffer out(*backend, (n + 5) * sizeof(std::uint32_t));
    std::uint32_t const poison_word = 0xDEADBEEF;
    backend->fill(out.handle(), 0, (n + 5) * sizeof(std::uint32_t), &poison_word, sizeof poison_word);
    cuda::CUdeviceptr pointer = out.handle();
    std::uint32_t count = n;
    void* args[] = {&pointer, &count};
    unsigned const block = 256;
    backend->modules().launch(f, {(n + block - 1) / block}, {block}, 0, args);
    auto const got = download_u32(*backend, out, n + 5);
    for (std::uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2 * i) << "at " << i;
    for (std::uint32_t i = n; i < n + 5; ++i) EXPECT_EQ(got[i], poison_word) << "written past the end at " << i;
}

TEST_F(CudaModuleCache, OptsInToLargeDynamicSharedMemory) {
    if (backend->compute_capability() < 80) GTEST_SKIP() << "the test's PTX targets sm_80";
    cuda::CUfunction const f =
        backend->modules().function("test/shared_echo", "shared_echo", [] { return std::string(shared_echo_ptx); });
    unsigned const threads = 128;
    unsigned const shared_bytes = 96 * 1024;  // above the 48 KiB default; every sm_80+ device opts in to 99 KiB
    DeviceBuffer out(*backend, threads * sizeof(std::uint32_t));
    cuda::CUdeviceptr pointer = out.handle();
    std::uint32_t offset = shared_bytes - threads * sizeof(std::uint32_t);
    void* args[] = {&pointer, &offset};
    backend->modules().launch(f, {1}, {threads}, shared_bytes, args);
    auto const got = download_u32(*backend, out, threads);
    for (std::uint32_t i = 0; i < threads; ++i) ASSERT_EQ(got[i], 3 * i) << "at " << i;
    // More than any device has: said before the driver is asked.
    EXPECT_THROW(backend->modules().launch(f, {1}, {threads}, 64u << 20, args), Unsupported);
}

TEST_F(CudaModuleCache, JitErrorsCarryTheLogAndTheOffendingLine) {
    std::string ptx = twice_ptx;
    std::string const good = "    shl.b32 %r6, %r5, 1;";
    std::string const bad = "    frobnicate.b32 %r6, %r5, 1;";
    ptx.replace(ptx.find(good), good.size(), bad);
    std::size_t const line = 1 + static_cast<std::size_t>(std::count(
                                     ptx.begin(), ptx.begin() + static_cast<std::ptrdiff_t>(ptx.find(bad)), '\n'));
    std::size_t const modules_before = backend->modules().module_count();
    try {
        (void)backend->modules().function("test/broken", "twice", [&] { return ptx; });
        ADD_FAILURE() << "the broken PTX loaded";
    } catch (DeviceError const& e) {
        std::string const what = e.what();
        EXPECT_EQ(e.code_name(), "CUDA_ERROR_INVALID_PTX") << what;
        EXPECT_EQ(e.code(), 218) << what;
        EXPECT_NE(what.find("test/broken"), std::string::npos) << what;
        EXPECT_NE(what.find("JIT error log"), std::string::npos) << what;
        EXPECT_NE(what.find("line " + std::to_string(line)), std::string::npos) << what;
        EXPECT_NE(what.find("PTX line " + std::to_string(line) + ": " + bad), std::string::npos) << what;
    }
    EXPECT_EQ(backend->modules().module_count(), modules_before);
    // The device is unharmed.
    auto const v = random_floats(1000, fresh_seed());
    EXPECT_EQ(Tensor<float>::from(v, {v.size()}, device).to_vector(), v);
}

}  // namespace
}  // namespace rayo::test
