// conv2d on ResNet layers at CPU batch sizes (3×3 64→64 at 56×56, 1×1 256→512 stride 2 at 56×56
// and 1×1 64→256 at 56×56) and MobileNet's first depthwise layer (3×3 on 32 channels at 112×112),
// N = 1 and 2, in f32 and f16 on the bench device, and, where OpenBLAS is linked
// (RAYO_BENCH_OPENBLAS), the usual CPU baseline beside them: an explicit im2col buffer then one
// cblas_sgemm per image and group, with OpenBLAS on rayo's thread count.
#include "bench_support.hpp"

#include <string>
#include <vector>

#ifdef RAYO_BENCH_OPENBLAS
#include <cblas.h>
#endif

namespace rayo_bench {
namespace {

struct ConvLayer {
    std::string name;
    std::int64_t n, c, h, w, o, k;
    int stride, padding;
    std::int64_t groups = 1;
};

std::vector<ConvLayer> layers() {
    std::vector<ConvLayer> out;
    for (std::int64_t n : {1, 2}) {
        out.push_back({"3x3_64to64_56/n" + std::to_string(n), n, 64, 56, 56, 64, 3, 1, 1});
        out.push_back({"1x1_256to512_s2_56/n" + std::to_string(n), n, 256, 56, 56, 512, 1, 2, 0});
        out.push_back({"1x1_64to256_56/n" + std::to_string(n), n, 64, 56, 56, 256, 1, 1, 0});
        out.push_back({"dw3x3_32_112/n" + std::to_string(n), n, 32, 112, 112, 32, 3, 1, 1, 32});
    }
    return out;
}

std::int64_t out_extent(ConvLayer const& l, std::int64_t in) { return (in + 2 * l.padding - l.k) / l.stride + 1; }

Work conv_work(ConvLayer const& l) {
    double const outputs = static_cast<double>(l.n * l.o * out_extent(l, l.h) * out_extent(l, l.w));
    return {.flops = 2.0 * outputs * static_cast<double>(l.c / l.groups * l.k * l.k)};
}

template <rayo::FloatingElement T>
void run_conv(benchmark::State& state, ConvLayer const& l) {
    rayo::Device const device = bench_device();
    auto const x = random_tensor<T>(rayo::Shape{l.n, l.c, l.h, l.w}, device, {-1, 1}, 1);
    auto const w = random_tensor<T>(rayo::Shape{l.o, l.c / l.groups, l.k, l.k}, device, {-1, 1}, 2);
    auto const out = output_tensor<T>(rayo::Shape{l.n, l.o, out_extent(l, l.h), out_extent(l, l.w)}, device);
    rayo::Conv2dParams const p{
        .stride = {l.stride, l.stride}, .padding = {l.padding, l.padding}, .groups = static_cast<int>(l.groups)};
    time_op(state, device, [&] { rayo::conv2d_into(x, w, p, out); });
    report(state, conv_work(l));
}

#ifdef RAYO_BENCH_OPENBLAS
// im2col of `channels` channels of one image: column (y, x) of row (c, i, j) holds
// x[c, y·s − p + i, x·s − p + j] (0 outside).
void im2col(ConvLayer const& l, float const* image, std::int64_t channels, float* cols) {
    std::int64_t const oh = out_extent(l, l.h), ow = out_extent(l, l.w);
    for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t i = 0; i < l.k; ++i)
            for (std::int64_t j = 0; j < l.k; ++j, cols += oh * ow)
                for (std::int64_t y = 0; y < oh; ++y) {
                    std::int64_t const iy = y * l.stride - l.padding + i;
                    for (std::int64_t x = 0; x < ow; ++x) {
                        std::int64_t const ix = x * l.stride - l.padding + j;
                        bool const inside = iy >= 0 && iy < l.h && ix >= 0 && ix < l.w;
                        cols[y * ow + x] = inside ? image[(c * l.h + iy) * l.w + ix] : 0.0f;
                    }
                }
}

void run_im2col_sgemm(benchmark::State& state, ConvLayer const& l) {
    openblas_set_num_threads(static_cast<int>(rayo::num_threads()));
    std::int64_t const pixels = out_extent(l, l.h) * out_extent(l, l.w), cg = l.c / l.groups, og = l.o / l.groups;
    std::int64_t const depth = cg * l.k * l.k;
    auto const x = random_values(static_cast<std::size_t>(l.n * l.c * l.h * l.w), {-1, 1}, 1);
    auto const w = random_values(static_cast<std::size_t>(l.o * depth), {-1, 1}, 2);
    std::vector<float> cols(static_cast<std::size_t>(depth * pixels)),
        out(static_cast<std::size_t>(l.n * l.o * pixels));
    for (auto _ : state)
        for (std::int64_t n = 0; n < l.n; ++n)
            for (std::int64_t g = 0; g < l.groups; ++g) {
                im2col(l, x.data() + (n * l.c + g * cg) * l.h * l.w, cg, cols.data());
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(og),
                            static_cast<blasint>(pixels), static_cast<blasint>(depth), 1.0f, w.data() + g * og * depth,
                            static_cast<blasint>(depth), cols.data(), static_cast<blasint>(pixels), 0.0f,
                            out.data() + (n * l.o + g * og) * pixels, static_cast<blasint>(pixels));
                benchmark::DoNotOptimize(out.data());
            }
    report(state, conv_work(l));
}
#endif

}  // namespace

void register_convolution() {
    for (ConvLayer const& l : layers()) {
        add_benchmark("conv2d/f32/" + l.name, [l](benchmark::State& s) { run_conv<float>(s, l); });
        add_benchmark("conv2d/f16/" + l.name, [l](benchmark::State& s) { run_conv<rayo::half>(s, l); });
#ifdef RAYO_BENCH_OPENBLAS
        if (bench_device().kind() == rayo::DeviceKind::cpu)
            add_benchmark("conv2d/f32/" + l.name + "/im2col_openblas",
                          [l](benchmark::State& s) { run_im2col_sgemm(s, l); });
#endif
    }
}

}  // namespace rayo_bench
