// The dispatch layer: a backend that reports an op unsupported gets it run on the CPU, logged
// once and counted; mixing devices is an error naming both.
#include "support/test_support.hpp"

#include "cpu/cpu_backend.hpp"
#include "core/device_registry.hpp"

namespace rayo::test {
namespace {

// A device that keeps its memory on the host and runs the unary ops but nothing else.
class PartialBackend final : public detail::Backend {
public:
    DeviceKind kind() const noexcept override { return DeviceKind::vulkan; }
    int index() const noexcept override { return 9; }
    std::string name() const override { return "partial test device"; }
    bool is_software() const noexcept override { return true; }
    std::uintptr_t allocate(std::size_t bytes) override { return host_.allocate(bytes); }
    void release(std::uintptr_t b) noexcept override { host_.release(b); }
    void upload(std::uintptr_t d, std::size_t o, void const* s, std::size_t n) override { host_.upload(d, o, s, n); }
    void download(std::uintptr_t s, std::size_t o, void* d, std::size_t n) override { host_.download(s, o, d, n); }
    void copy(std::uintptr_t s, std::size_t so, std::uintptr_t d, std::size_t dof, std::size_t n) override {
        host_.copy(s, so, d, dof, n);
    }
    void fill(std::uintptr_t d, std::size_t o, std::size_t n, void const* p, std::size_t pn) override {
        host_.fill(d, o, n, p, pn);
    }
    void synchronize() override {}
    MemoryUsage memory_usage() const override { return host_.memory_usage(); }
    void reset_peak_memory() override { host_.reset_peak_memory(); }
    detail::Support supports(detail::OpDescriptor const& op, detail::OpViews const& v) const override {
        if (!std::holds_alternative<detail::op::Unary>(op))
            return detail::Support::no("the test device only runs unary ops");
        return host_.supports(op, v);
    }
    void run(detail::OpDescriptor const& op, detail::OpViews const& v) override {
        ++unary_calls;
        host_.run(op, v);
    }

    int unary_calls = 0;

private:
    cpu::CpuBackend host_;
};

class Dispatch : public ::testing::Test {
protected:
    void SetUp() override {
        auto b = std::make_unique<PartialBackend>();
        backend = b.get();
        detail::DeviceRegistry::instance().add(std::move(b));
        device = Device::parse("vulkan:9");
    }
    void TearDown() override { detail::DeviceRegistry::instance().remove(backend); }
    PartialBackend* backend = nullptr;
    Device device = Device::cpu();
};

TEST_F(Dispatch, UnsupportedOpsFallBackToTheCpuVisibly) {
    auto const in = random_floats(3 * 50, fresh_seed());
    auto x = Tensor<float>::from(in, {3, 50}, device);
    EXPECT_EQ(x.device(), device);
    EXPECT_NE(Device::best(), device) << "a software device must never be picked by best()";
    reset_stats();

    auto r = relu(x);  // supported: runs on the device itself
    EXPECT_EQ(backend->unary_calls, 1);
    EXPECT_EQ(stats().cpu_fallbacks, 0u);

    ::testing::internal::CaptureStderr();
    auto p = softmax(x);
    auto q = softmax(x);
    std::string const log = ::testing::internal::GetCapturedStderr();
    Stats const s = stats();
    EXPECT_EQ(s.ops, 3u);
    EXPECT_EQ(s.cpu_fallbacks, 2u);
    EXPECT_EQ(s.fallbacks_by_op.at("softmax on vulkan:9"), 2u);
    // Logged once per (op, device) for the whole process, whatever reset_stats does.
    auto const first = log.find("softmax on vulkan:9");
    EXPECT_NE(first, std::string::npos) << log;
    EXPECT_EQ(log.find("softmax on vulkan:9", first + 1), std::string::npos) << log;
    EXPECT_EQ(p.device(), device);
    auto const want = softmax(x.to(Device::cpu())).to_vector();
    EXPECT_EQ(p.to_vector(), want);
    EXPECT_EQ(q.to_vector(), want);

    // The fallback writes outputs back to the device, including in-place and out= forms.
    auto out = poisoned({3, 50}, device);
    rms_norm_into(x, 1e-6f, out);
    EXPECT_EQ(out.to_vector(), rms_norm(x.to(Device::cpu()), 1e-6f).to_vector());
    auto sums = sum(x, 1);
    EXPECT_EQ(sums.to_vector(), sum(x.to(Device::cpu()), 1).to_vector());
    EXPECT_EQ(matmul(x, Tensor<float>::from(random_floats(50 * 4, 1), {50, 4}, device)).shape(), (Shape{3, 4}));
}

TEST_F(Dispatch, MixingDevicesNamesBoth) {
    auto a = Tensor<float>::zeros({4}, device);
    auto b = Tensor<float>::zeros({4});
    try {
        (void)add(a, b);
        ADD_FAILURE() << "no exception";
    } catch (Error const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find("vulkan:9"), std::string::npos) << what;
        EXPECT_NE(what.find("cpu"), std::string::npos) << what;
    }
    EXPECT_THROW(relu_into(a, b), Error);
    // Explicit copies between devices work.
    std::vector<float> v{1, 2, 3, 4};
    EXPECT_EQ(Tensor<float>::from(v, {4}, device).to(Device::cpu()).to_vector(), v);
    EXPECT_EQ(Tensor<float>::from(v, {4}).to(device).to_vector(), v);
}

}  // namespace
}  // namespace rayo::test
