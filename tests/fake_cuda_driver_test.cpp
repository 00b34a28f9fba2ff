// The CUDA backend's launch path against a driver that records what it is asked and runs nothing
// (support/fake_cuda_driver.cpp, found as libcuda.so.1 through LD_LIBRARY_PATH): CI has no GPU,
// and this is how it sees which kernels reach the driver and how. ctest runs it twice: as an sm_90
// and, with RAYO_FAKE_CUDA_CC=80, as an sm_80. Results are not checked: nothing computes them.
#include <gtest/gtest.h>
#include <rayo/cuda_kernel.hpp>
#include <rayo/native.hpp>
#include <rayo/ptx/ptx.hpp>
#include <rayo/rayo.hpp>

#include <dlfcn.h>

#include "core/device_registry.hpp"
#include "cuda/cuda_backend.hpp"
#include "support/memory_usage_checks.hpp"
#include "support/test_support.hpp"
#include "scale_add_kernel.hpp"

#include <array>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace rayo::test {
namespace {

// Set by main when ctest runs the binary (with the fake on LD_LIBRARY_PATH): a device that is not
// the fake's is then a failure, not a skip.
bool fake_expected = false;

// The fake driver rayo loaded (call after Device::all()).
class FakeDriver {
public:
    FakeDriver() : library_(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {}
    [[nodiscard]] bool loaded() const { return library_ && symbol("rayo_fake_cuda_launch_count"); }
    [[nodiscard]] int compute_capability() const { return call<int (*)()>("rayo_fake_cuda_compute_capability")(); }
    [[nodiscard]] int launches() const { return call<int (*)()>("rayo_fake_cuda_launch_count")(); }
    [[nodiscard]] int modules() const { return call<int (*)()>("rayo_fake_cuda_module_count")(); }
    [[nodiscard]] int tensor_maps() const { return call<int (*)()>("rayo_fake_cuda_tensor_map_count")(); }
    [[nodiscard]] int graphs() const { return call<int (*)()>("rayo_fake_cuda_graph_count")(); }
    [[nodiscard]] std::string ptx(int launch) const {
        return call<char const* (*)(int)>("rayo_fake_cuda_launch_ptx")(launch);
    }
    [[nodiscard]] bool starts_early(int launch) const {
        return call<int (*)(int)>("rayo_fake_cuda_launch_starts_early")(launch) != 0;
    }

private:
    [[nodiscard]] void* symbol(char const* name) const { return dlsym(library_, name); }
    template <class F>
    [[nodiscard]] F call(char const* name) const {
        return reinterpret_cast<F>(symbol(name));
    }
    void* library_;
};

// The body of the PTX's one .entry, from its opening brace.
std::string_view entry_body(std::string_view ptx) {
    std::size_t const entry = ptx.find(".entry");
    return entry == std::string_view::npos ? std::string_view{} : ptx.substr(ptx.find('{', entry));
}

std::size_t count(std::string_view text, std::string_view what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

class FakeCuda : public ::testing::Test {
protected:
    void SetUp() override {
        for (Device d : Device::all())
            if (d.kind() == DeviceKind::cuda) device = d;
        driver = FakeDriver();  // now that rayo has loaded libcuda.so.1
        if (device.kind() == DeviceKind::cuda && driver.loaded()) return;
        if (fake_expected) FAIL() << "rayo did not load the fake libcuda.so.1 (LD_LIBRARY_PATH)";
        GTEST_SKIP() << "the fake libcuda.so.1 is not what loaded (ctest runs this with it)";
    }
    // Whether the last launch's kernel name carries `marker` (a read placed before its wait), and if
    // so that its PTX waits once and issues its first `load` before that wait.
    bool last_launch_reads_before_its_wait(std::string_view marker, std::string_view load) {
        std::string const ptx = driver.ptx(driver.launches() - 1);
        std::string_view const body = entry_body(ptx);
        bool const named = ptx.find(marker) != std::string::npos;
        if (named) {
            EXPECT_EQ(count(body, "griddepcontrol.wait;"), 1u) << ptx;
            EXPECT_LT(body.find(load), body.find("griddepcontrol.wait;")) << ptx;
        }
        return named;
    }
    // A q4_k GEMV whose blocks share x (many short rows), its x filled and y zeroed: w, x, y.
    [[nodiscard]] std::tuple<Tensor<q4_k>, Tensor<float>, Tensor<float>> shared_x_gemv() const {
        constexpr std::int64_t rows = 8200;  // more than the rows a GEMV gives each block's own x
        std::vector<float> const values(rows * 256, 0.25f);
        return {quantize<q4_k>(Tensor<float>::from(values, {rows, 256})).to(device),
                Tensor<float>::full({1, 256}, 1.0f, device), Tensor<float>::zeros({1, rows}, device)};
    }
    Device device = Device::cpu();
    FakeDriver driver;
};

// On sm_90 every kernel is launched to start early and waits for the grid before it first thing;
// elsewhere neither. A second launch of the same op reuses the loaded module.
TEST_F(FakeCuda, KernelsWaitForThePreviousGridFirstAndStartEarlyOnSm90Only) {
    bool const sm90 = driver.compute_capability() >= 90;
    auto x = Tensor<float>::zeros({1024}, device);
    int const before = driver.launches();
    add_into(x, 1.0f, x);
    ASSERT_EQ(driver.launches(), before + 1);
    int const modules = driver.modules();
    add_into(x, 1.0f, x);
    ASSERT_EQ(driver.launches(), before + 2);
    EXPECT_EQ(driver.modules(), modules);

    std::string const ptx = driver.ptx(before);
    std::string_view const body = entry_body(ptx);
    ASSERT_FALSE(body.empty()) << ptx;
    EXPECT_EQ(driver.starts_early(before), sm90);
    EXPECT_EQ(driver.starts_early(before + 1), sm90);
    if (sm90) {
        // The wait before any other instruction (the body opens with register declarations).
        std::size_t const wait = body.find("griddepcontrol.wait;");
        ASSERT_NE(wait, std::string_view::npos) << ptx;
        EXPECT_LT(wait, body.find("ld.param")) << ptx;
        EXPECT_EQ(count(body, "griddepcontrol.wait;"), 1u) << ptx;
    } else {
        EXPECT_EQ(body.find("griddepcontrol"), std::string_view::npos) << ptx;
    }
}

// rayo::capture on CUDA is a stream capture: the body's kernels reach the driver once, into the
// graph, and each replay launches them again; nothing else reaches the stream meanwhile (a host
// read inside the body throws before it does), a failed body leaves no graph and the stream as it
// was, and destroying the Graph destroys the driver's graph.
TEST_F(FakeCuda, CaptureRecordsTheBodysKernelsIntoAGraphThatEachReplayLaunches) {
    auto x = Tensor<float>::zeros({1024}, device);
    auto const w = Tensor<half>::zeros({256, 1024}, device);
    auto y = Tensor<float>::zeros({256}, device);
    int const graphs = driver.graphs();
    int const before = driver.launches();
    {
        Graph graph = capture(device, [&] {
            add_into(x, 1.0f, x);
            linear_into(x.reshape({1, 1024}), w, y.reshape({1, 256}));
        });
        EXPECT_TRUE(graph.native());
        EXPECT_EQ(graph.ops(), 2u);
        EXPECT_EQ(driver.graphs(), graphs + 1);
        int const recorded = driver.launches();
        EXPECT_EQ(recorded, before) << "a capture runs nothing";
        std::uint64_t const ops = stats().ops;
        graph.replay();
        int const per_replay = driver.launches() - recorded;
        EXPECT_GE(per_replay, 2);
        graph.replay();
        EXPECT_EQ(driver.launches(), recorded + 2 * per_replay);
        EXPECT_EQ(stats().ops, ops + 4);
        EXPECT_NO_THROW(device.synchronize());
        EXPECT_NO_THROW((void)y.to_vector());
    }
    EXPECT_EQ(driver.graphs(), graphs);
    int const launches = driver.launches();
    EXPECT_THROW((void)capture(device,
                               [&] {
                                   add_into(x, 1.0f, x);
                                   (void)x.to_vector();
                               }),
                 Error);
    EXPECT_EQ(driver.graphs(), graphs);
    EXPECT_EQ(driver.launches(), launches);
    add_into(x, 1.0f, x);  // the stream runs as before
    EXPECT_EQ(driver.launches(), launches + 1);
    EXPECT_NO_THROW(device.synchronize());
}

// Inside a capture a buffer is settled unless an op of the capture writes it (the graph's launch
// waits for all work before it): a GEMV whose blocks share x reads x before its wait even though
// the host has not waited since x was written, unless the capture itself wrote x.
TEST_F(FakeCuda, CapturedKernelsReadBeforeTheirWaitWhatTheCaptureDoesNotWrite) {
    bool const sm90 = driver.compute_capability() >= 90;
    auto const [w, x, y] = shared_x_gemv();
    auto const x_first = [&] { return last_launch_reads_before_its_wait("_xw", "ld.global.nc.v4.f32"); };
    Graph reads = capture(device, [&] { linear_into(x, w, y); });
    reads.replay();
    EXPECT_EQ(x_first(), sm90) << "filled before the capture: done when the graph starts";
    Graph writes = capture(device, [&] {
        add_into(x, 1.0f, x);
        linear_into(x, w, y);
    });
    writes.replay();
    EXPECT_FALSE(x_first()) << "written by the capture itself";
    linear_into(x, w, y);
    EXPECT_FALSE(x_first()) << "eagerly after the replay: written by it, not waited for";
}

// A large f16 product reaches an sm_90's driver as the warpgroup-MMA kernel, emitted for sm_90a,
// with its two tensor maps encoded by the driver; an sm_80 gets the mma.sync kernel and no maps.
TEST_F(FakeCuda, LargeHalfProductsRunTheWgmmaKernelWithTensorMapsOnSm90) {
    bool const sm90 = driver.compute_capability() >= 90;
    auto const a = Tensor<half>::zeros({1024, 1024}, device);
    auto const b = Tensor<half>::zeros({1024, 1024}, device);
    auto const out = Tensor<float>::zeros({1024, 1024}, device);
    int const before = driver.launches(), maps = driver.tensor_maps();
    matmul_into(a, b, out);
    ASSERT_EQ(driver.launches(), before + 1);
    std::string const ptx = driver.ptx(before);
    EXPECT_EQ(ptx.find("wgmma.mma_async") != std::string::npos, sm90);
    EXPECT_EQ(ptx.find(".target sm_90a") != std::string::npos, sm90);
    EXPECT_EQ(driver.tensor_maps(), maps + (sm90 ? 2 : 0));
    EXPECT_NE(ptx.find(sm90 ? ".param .align 64 .b8 a_map[128]" : "mma.sync.aligned.m16n8k16"), std::string::npos);
}

// A prefill of f16 attention reaches an sm_90 as the wgmma kernel with its three tensor maps (q, k,
// v) encoded, and an sm_80 as the mma.sync kernel.
TEST_F(FakeCuda, HalfAttentionPrefillRunsTheWgmmaKernelWithTensorMapsOnSm90) {
    bool const sm90 = driver.compute_capability() >= 90;
    auto const q = Tensor<half>::zeros({1, 256, 8, 128}, device);
    auto const kv = Tensor<half>::zeros({1, 256, 2, 128}, device);
    auto const out = Tensor<half>::zeros({1, 256, 8, 128}, device);
    AttentionParams params;
    params.causal = true;
    int const before = driver.launches(), maps = driver.tensor_maps();
    attention_into(q, kv, kv, params, out);
    ASSERT_EQ(driver.launches(), before + 1);
    std::string const ptx = driver.ptx(before);
    EXPECT_EQ(ptx.find("rayo_attention_wgmma_f16_d128") != std::string::npos, sm90);
    EXPECT_EQ(driver.tensor_maps(), maps + (sm90 ? 3 : 0));
    EXPECT_NE(ptx.find(sm90 ? ".param .align 64 .b8 v_map[128]" : "mma.sync.aligned.m16n8k16"), std::string::npos);
}

// The one-row K-quant GEMV places its own wait after prefetching its first rows (sm_90): the
// runner adds none before it.
TEST_F(FakeCuda, TheGemvKeepsItsOwnWaitAfterItsPrefetch) {
    bool const sm90 = driver.compute_capability() >= 90;
    std::vector<float> const values(256 * 256, 0.5f);
    auto const w = quantize<q4_k>(Tensor<float>::from(values, {256, 256})).to(device);
    auto const x = Tensor<float>::zeros({1, 256}, device);
    auto const y = Tensor<float>::zeros({1, 256}, device);
    int const before = driver.launches();
    linear_into(x, w, y);
    ASSERT_EQ(driver.launches(), before + 1);
    std::string const ptx = driver.ptx(before);
    std::string_view const body = entry_body(ptx);
    EXPECT_EQ(driver.starts_early(before), sm90);
    if (!sm90) {
        EXPECT_EQ(body.find("griddepcontrol"), std::string_view::npos) << ptx;
        return;
    }
    EXPECT_EQ(count(body, "griddepcontrol.wait;"), 1u) << ptx;
    std::size_t const prefetch = body.find("cp.async.bulk.prefetch.L2");
    ASSERT_NE(prefetch, std::string_view::npos) << ptx;
    EXPECT_LT(prefetch, body.find("griddepcontrol.wait;")) << ptx;
}

// Weights that no queued kernel may still be writing (the host has waited for the device since they
// were last written) are requested before the GEMV's wait (sm_90); weights written since, by an
// upload or a copy, are not.
TEST_F(FakeCuda, TheGemvRequestsItsWeightsBeforeItsWaitOnlyOnceTheHostHasWaitedSinceTheyWereWritten) {
    bool const sm90 = driver.compute_capability() >= 90;
    std::vector<float> const values(256 * 256, 0.5f);
    auto const w = quantize<q4_k>(Tensor<float>::from(values, {256, 256})).to(device);
    auto const x = Tensor<float>::zeros({1, 256}, device);
    auto const y = Tensor<float>::zeros({1, 256}, device);
    auto const weights_first = [&] { return last_launch_reads_before_its_wait("_w1", "ld.global.nc"); };
    linear_into(x, w, y);
    EXPECT_FALSE(weights_first()) << "uploaded, not waited for";
    device.synchronize();
    linear_into(x, w, y);
    EXPECT_EQ(weights_first(), sm90);
    linear_into(x, w, y);  // the GEMVs before wrote y, not w
    EXPECT_EQ(weights_first(), sm90);

    auto const copied = w.clone();
    linear_into(x, copied, y);
    EXPECT_FALSE(weights_first()) << "copied, not waited for";
    (void)y.to_vector();  // a download waits for everything queued before it
    linear_into(x, copied, y);
    EXPECT_EQ(weights_first(), sm90);
}

// Likewise x: a GEMV whose blocks share x (many short rows) reads it before its wait once the host
// has waited since x was last written (sm_90).
TEST_F(FakeCuda, TheGemvReadsXBeforeItsWaitOnlyOnceTheHostHasWaitedSinceXWasWritten) {
    bool const sm90 = driver.compute_capability() >= 90;
    auto const [w, x, y] = shared_x_gemv();
    auto const x_first = [&] { return last_launch_reads_before_its_wait("_xw", "ld.global.nc.v4.f32"); };
    linear_into(x, w, y);
    EXPECT_FALSE(x_first()) << "filled, not waited for";
    device.synchronize();
    linear_into(x, w, y);
    EXPECT_EQ(x_first(), sm90);
    linear_into(x, w, y);  // the GEMVs before wrote y, not x
    EXPECT_EQ(x_first(), sm90);

    add_into(x, 1.0f, x);
    linear_into(x, w, y);
    EXPECT_FALSE(x_first()) << "written by an op, not waited for";
    device.synchronize();
    linear_into(x, w, y);
    EXPECT_EQ(x_first(), sm90);
}

// Device::memory_usage() reads the pool's counts (in use rounded to the driver's granule, reserved
// in whole chunks), and reset_peak_memory() resets its high watermarks the one way the driver takes.
// RAYO_CUDA_PROFILE's table (CudaBackend::set_profiling, profile_table): every launch made while
// profiling, outside a capture, counted under its kernel with the fake driver's 0.25 ms an event
// pair; a replayed graph timed whole as one row; nothing counted once profiling is off.
TEST_F(FakeCuda, ProfileTimesEveryLaunchByKernelAndEachGraphReplayWhole) {
    auto& backend = dynamic_cast<cuda::CudaBackend&>(detail::DeviceRegistry::instance().backend(device));
    auto x = Tensor<float>::zeros({1024}, device);
    auto y = Tensor<float>::zeros({1024}, device);
    Graph graph = capture(device, [&] { add_into(x, 1.0f, x); });
    backend.set_profiling(true);
    int const before = driver.launches();
    for (int i = 0; i < 5; ++i) add_into(x, 1.0f, x);
    for (int i = 0; i < 3; ++i) softmax_into(x.reshape({8, 128}), -1, y.reshape({8, 128}));
    int const launched = driver.launches() - before;
    graph.replay();
    graph.replay();
    backend.set_profiling(false);
    add_into(x, 1.0f, x);
    std::optional<std::string> const table = backend.profile_table();
    ASSERT_TRUE(table);
    std::istringstream rows(*table);
    std::string line;
    std::uint64_t kernels = 0, replays = 0, named_rows = 0;
    while (std::getline(rows, line)) {
        std::istringstream fields(line);
        std::string name;
        std::uint64_t count = 0;
        double ms = 0;
        if (!(fields >> name >> count >> ms) || name == "total") continue;
        EXPECT_NEAR(ms, 0.25 * static_cast<double>(count), 1e-6) << line;
        (name == "graph_replay" ? replays : kernels) += count;
        ++named_rows;
    }
    EXPECT_EQ(kernels, static_cast<std::uint64_t>(launched)) << *table;
    EXPECT_GE(named_rows, 3u) << *table;  // the add's kernel, the softmax's and the replays
    EXPECT_EQ(replays, 2u) << *table;
    EXPECT_NE(table->find("total"), std::string::npos) << *table;
}

// Native handles (rayo/native.hpp): the context and stream rayo queues on, a tensor's device
// address, and memory allocated elsewhere (here host memory, which is the fake's device memory)
// used as a tensor without a copy: reads and copies take its bytes, kernels get it, and the owner's
// release runs once, when the last tensor over it is gone. rayo's own memory is refused.
TEST_F(FakeCuda, NativeHandlesAreTheDriversAndOwnMemoryBecomesATensor) {
    CudaHandles const h = cuda_handles(device);
    EXPECT_EQ(h.device, 0);
    EXPECT_NE(h.context, nullptr);
    EXPECT_NE(h.stream, nullptr);
    auto const rayo_owned = Tensor<float>::full({8, 4}, 1.5f, device);
    NativeMemory const whole = native_memory(rayo_owned);
    EXPECT_EQ(whole.kind, DeviceKind::cuda);
    EXPECT_EQ(native_memory(rayo_owned.slice(2, 3)).handle, whole.handle + 2 * 4 * sizeof(float));
    EXPECT_EQ(native_memory(rayo_owned.slice(2, 3)).offset, 0u);
    try {
        (void)from_native_memory<float>(native_memory(rayo_owned.slice(1, 2)), {4}, device);
        ADD_FAILURE() << "rayo's own memory was adopted";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("overlap a rayo tensor's memory"), std::string::npos) << e.what();
    }

    alignas(16) std::array<float, 32> owned{};
    for (std::size_t i = 0; i < owned.size(); ++i) owned[i] = static_cast<float>(i) - 7.5f;
    int released = 0;
    {
        auto t = std::optional(from_native_memory<float>(
            {DeviceKind::cuda, reinterpret_cast<std::uintptr_t>(owned.data()), 0, sizeof owned}, {8, 4}, device,
            [&] { ++released; }));
        EXPECT_EQ(native_memory(*t).handle, reinterpret_cast<std::uintptr_t>(owned.data()));
        auto const copied = t->clone();  // a copy from its address into rayo's memory
        EXPECT_EQ(copied.to_vector(), std::vector<float>(owned.begin(), owned.end()));
        int const before = driver.launches();
        add_into(*t, 1.0f, *t);
        EXPECT_EQ(driver.launches(), before + 1);
        auto const view = t->slice(4, 8);
        t.reset();
        EXPECT_EQ(released, 0);
        EXPECT_EQ(view.to_vector(), std::vector<float>(owned.begin() + 16, owned.end()));  // no kernel ran
    }
    EXPECT_EQ(released, 1);
}

// launch_cuda_kernel: the kernel reaches the driver as the PTX rayo emits for the device (on sm_90
// with its wait for the previous grid first), loaded once per distinct text; the arguments and the
// launch shape are checked against the kernel's parameters and the device first, with messages
// naming the argument, and nothing is queued when they do not fit.
TEST_F(FakeCuda, UserKernelsLaunchOnRayoTensorsAndBadArgumentsAreNamed) {
    auto const x = Tensor<float>::full({1000}, 2.0f, device);
    auto y = Tensor<float>::full({1000}, 1.0f, device);
    ptx::Kernel const kernel = scale_add_kernel();  // examples/cuda_kernel.cpp's
    int const launches = driver.launches(), modules = driver.modules();
    LaunchShape const shape{.grid = {4, 1, 1}, .block = {256, 1, 1}};
    launch_cuda_kernel(device, kernel, shape, {x, y, 0.5f, std::uint32_t{1000}});
    ASSERT_EQ(driver.launches(), launches + 1);
    EXPECT_EQ(driver.modules(), modules + 1);
    std::string const ptx = driver.ptx(driver.launches() - 1);
    EXPECT_NE(ptx.find(".entry scale_add("), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("griddepcontrol.wait") != std::string::npos, driver.compute_capability() >= 90) << ptx;
    launch_cuda_kernel(device, kernel, shape, {x, y, 0.25f, std::uint32_t{1000}});  // loaded already
    ptx::Kernel bounded = scale_add_kernel();
    bounded.max_threads(256);  // .maxntid: another text
    launch_cuda_kernel(device, bounded, shape, {x, y, 0.25f, std::uint32_t{1000}});
    EXPECT_EQ(driver.launches(), launches + 3);
    EXPECT_EQ(driver.modules(), modules + 2);

    auto const on_cpu = Tensor<float>::zeros({1000});
    std::pair<std::function<void()>, std::string> const refused[] = {
        {[&] {
             launch_cuda_kernel(device, kernel, shape, {x, y, 0.5f});
         },
         "3 arguments for its 4 parameters (.u64 x, .u64 y, .f32 a, .u32 n)"},
        {[&] {
             launch_cuda_kernel(device, kernel, shape, {x, y, 0.5f, 1000.0f});
         },
         "argument 3 (n) is a float, the parameter is .u32"},
        {[&] {
             launch_cuda_kernel(device, kernel, shape, {x, 0.5f, 0.5f, std::uint32_t{1000}});
         },
         "argument 1 (y) is a float, the parameter is .u64"},
        {[&] {
             launch_cuda_kernel(device, kernel, shape, {on_cpu, y, 0.5f, std::uint32_t{1000}});
         },
         "argument 0 (x) is a tensor on cpu"},
        {[&] {
             launch_cuda_kernel(device, kernel, {.grid = {4, 1, 1}, .block = {2048, 1, 1}}, {x, y, 0.5f, 1u});
         },
         "a block of 2048 threads (at most 1024)"},
        {[&] {
             launch_cuda_kernel(device, kernel, {.grid = {1, 70000, 1}, .block = {32, 1, 1}}, {x, y, 0.5f, 1u});
         },
         "the grid's y is 70000 (at most 65535)"},
        {[&] {
             launch_cuda_kernel(device, kernel, {.grid = {0, 1, 1}}, {x, y, 0.5f, 1u});
         },
         "the grid's x is 0"},
        {[&] {
             launch_cuda_kernel(device, kernel, {.grid = {1, 1, 1}, .block = {32, 1, 1}, .shared_bytes = 1u << 30},
                                {x, y, 0.5f, 1u});
         },
         "bytes of shared memory (the device allows"},
        {[&] {
             launch_cuda_kernel(Device::cpu(), kernel, shape, {x, y, 0.5f, 1u});
         },
         "launch_cuda_kernel: kernel scale_add on cpu: not a CUDA device"},
        {[&] { (void)capture(device, [&] {
                   launch_cuda_kernel(device, kernel, shape, {x, y, 0.5f, 1u});
               }); },
         "launch_cuda_kernel: kernel scale_add on cuda:0"},
    };
    for (auto const& [call, text] : refused) expect_error<Error>(call, {text, "scale_add"});
    EXPECT_EQ(driver.launches(), launches + 3);
}

TEST_F(FakeCuda, MemoryUsageIsThePoolsCountsAndPeaksReset) {
    check_tensor_counts(device, 1);
    check_tensor_counts(device, 3'000'001);
    check_op_counts(device);
    check_concurrent_reads(device);
    MemoryUsage const u = device.memory_usage();
    EXPECT_GE(u.reserved_bytes, std::size_t{2} << 20) << u;  // the fake reserves 2 MiB chunks
    EXPECT_EQ(u.reserved_bytes % (std::size_t{2} << 20), 0u) << u;
}

}  // namespace
}  // namespace rayo::test

// --compute-capability=80 makes the fake driver an sm_80 (set before rayo first asks it).
int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    constexpr std::string_view flag = "--compute-capability=";
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]).starts_with(flag)) {
            setenv("RAYO_FAKE_CUDA_CC", argv[i] + flag.size(), 1);
            rayo::test::fake_expected = true;
        }
    return RUN_ALL_TESTS();
}
