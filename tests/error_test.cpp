// Bad input: a clear rayo::Error naming the problem, and every tensor left as it was.
#include "support/test_support.hpp"

namespace rayo::test {
namespace {

class Errors : public ::testing::Test {
protected:
    std::vector<float> av = random_floats(6, fresh_seed());
    std::vector<float> bv = random_floats(12, fresh_seed());
    Tensor<float> a = Tensor<float>::from(av, {2, 3});
    Tensor<float> b = Tensor<float>::from(bv, {4, 3});
    Tensor<float> out = poisoned({2, 3});

    void TearDown() override {
        EXPECT_EQ(a.to_vector(), av);
        EXPECT_EQ(b.to_vector(), bv);
        for (float v : out.to_vector()) EXPECT_EQ(v, poison);
    }
};

TEST_F(Errors, ShapeMismatchNamesBothShapes) {
    expect_error<ShapeError>([&] { (void)add(a, b); }, {"add", "[2, 3]", "[4, 3]"});
    expect_error<ShapeError>([&] { mul_into(a, b, out); }, {"mul", "[2, 3]", "[4, 3]"});
    expect_error<ShapeError>([&] { (void)dot(a, b); }, {"dot", "[2, 3]", "[4, 3]"});
    expect_error<ShapeError>([&] { relu_into(b, out); }, {"relu", "[2, 3]", "[4, 3]"});
}

// Broadcasting (NumPy's rules): shapes that do not broadcast name both and the axis; an output may
// be an input only where that input has the result's shape.
TEST_F(Errors, ShapesThatDoNotBroadcast) {
    expect_error<ShapeError>([&] { (void)sub(a, Tensor<float>::zeros({2})); },
                             {"sub", "[2, 3]", "[2]", "do not broadcast", "3 and 2"});
    expect_error<ShapeError>(
        [&] {
            div_into(a, Tensor<float>::zeros({4, 3, 1}), out);
        },
        {"div", "[2, 3]", "[4, 3, 1]", "2 and 3"});
    expect_error<ShapeError>([&] { add_into(a, Tensor<float>::zeros({3}), Tensor<float>::zeros({3})); },
                             {"add", "out has shape [3]", "[2, 3]"});
    Tensor<float> row = Tensor<float>::from(std::vector<float>(bv.begin(), bv.begin() + 3), {3});
    Tensor<float> wide = Tensor<float>::from(bv, {2, 2, 3});
    expect_error<ShapeError>([&] { mul_into(wide, row, row); }, {"mul", "out has shape [3]", "[2, 2, 3]"});
    Shape const nine{1, 1, 1, 1, 1, 1, 1, 2, 3};
    expect_error<ShapeError>([&] { (void)add(Tensor<float>::zeros(nine), row); }, {"add", "up to 8 axes"});
}

// The layout ops check everything before they copy anything.
TEST_F(Errors, LayoutOpsNameWhatIsWrong) {
    expect_error<ShapeError>([&] { (void)permute(a, {0, 0}); }, {"permute", "[0, 0]", "not a permutation", "[2, 3]"});
    expect_error<ShapeError>([&] { (void)permute(a, {1}); }, {"permute", "[1]", "[2, 3]"});
    expect_error<ShapeError>([&] { (void)permute(a, {0, 2}); }, {"permute", "[0, 2]"});
    expect_error<ShapeError>([&] { permute_into(a, {1, 0}, out); }, {"permute", "out has shape [2, 3]", "[3, 2]"});
    expect_error<ShapeError>([&] { (void)transpose(a, 0, 2); }, {"axis 2", "[2, 3]"});
    expect_error<ShapeError>([&] { (void)expand(a, Shape{2, 5}); }, {"expand", "[2, 3]", "[2, 5]"});
    expect_error<ShapeError>([&] { (void)expand(b, Shape{3}); }, {"expand", "[4, 3]", "does not broadcast to [3]"});
    expect_error<ShapeError>([&] { (void)narrow(a, 1, 2, 2); }, {"narrow", "out of range", "axis 1", "[2, 3]"});
    expect_error<ShapeError>([&] { (void)narrow(a, 0, -1, 1); }, {"narrow", "out of range"});
    expect_error<ShapeError>(
        [&] {
            (void)concat(std::vector<Tensor<float>>{a, b}, 1);
        },
        {"concat", "axis 1", "[4, 3]", "[2, 3]"});
    expect_error<Error>([&] { (void)concat(std::vector<Tensor<float>>{}, 0); }, {"concat", "no tensors"});
    expect_error<ShapeError>([&] { copy_into(b, out); }, {"copy", "[4, 3]", "[2, 3]"});
    expect_error<Error>([&] { copy_into(a, a); }, {"copy", "overlaps"});
    std::vector<std::int64_t> nine(9, 1);
    expect_error<ShapeError>(
        [&] {
            (void)permute(Tensor<float>::zeros(Shape(nine)), {0, 1, 2, 3, 4, 5, 6, 7, 8});
        },
        {"permute", "up to 8 axes"});
}

// The gathers check shapes and devices before they read an id; the ids' element type is checked
// when the call compiles (Tensor<int32_t> only).
template <class Ids>
concept GatherIds = requires(Tensor<float> const& t, Ids const& ids) {
    embedding(t, ids);
};
static_assert(GatherIds<Tensor<std::int32_t>> && !GatherIds<Tensor<std::int64_t>> && !GatherIds<Tensor<float>>);

TEST_F(Errors, GathersNameWhatIsWrong) {
    Tensor<std::int32_t> const ids = Tensor<std::int32_t>::from(std::vector<std::int32_t>{1, 0}, {2});
    expect_error<ShapeError>(
        [&] {
            (void)embedding(Tensor<float>::zeros({2, 3, 4}), ids);
        },
        {"embedding", "[rows, dim]", "[2, 3, 4]"});
    Tensor<std::int32_t> const three = Tensor<std::int32_t>::from(std::vector<std::int32_t>{1, 0, 1}, {3});
    expect_error<ShapeError>([&] { embedding_into(a, three, out); },
                             {"embedding", "out has shape [2, 3]", "the result has shape [3, 3]"});
    expect_error<ShapeError>([&] { (void)index_select(a, 2, ids); }, {"axis 2", "[2, 3]"});
    expect_error<ShapeError>(
        [&] {
            (void)index_select(a, 0, ids.reshape({1, 2}));
        },
        {"index_select", "rank 0 or 1", "[1, 2]"});
    expect_error<ShapeError>([&] { (void)index_select(Tensor<float>::full({}, 1.0f), 0, ids); },
                             {"index_select", "rank 0"});
    // Out of range on the CPU: raised at once, naming the id and where it is; nothing written.
    Tensor<std::int32_t> const bad = Tensor<std::int32_t>::from(std::vector<std::int32_t>{1, 4}, {2});
    expect_error<IndexError>([&] { embedding_into(b, bad, out); }, {"embedding", "id 4", "ids[1]", "table of 4 rows"});
    expect_error<IndexError>(
        [&] {
            index_select_into(a, 1, Tensor<std::int32_t>::from(std::vector<std::int32_t>{0, 2, -3}, {3}), out);
        },
        {"index_select", "id -3", "ids[2]", "table of 3 rows"});
    // Another device: a tensor on it is named with the CPU's.
    for (Device d : Device::all()) {
        if (d.kind() == DeviceKind::cpu) continue;
        expect_error<Error>([&] { (void)embedding(b, ids.to(d)); }, {"embedding", "different devices", "cpu", d.id()});
    }
}

// rope checks x's rank, n_dims, the positions' and factors' lengths, freq_base and the devices
// before anything runs; the positions' element type is checked when the call compiles.
template <class Positions>
concept RopePositions = requires(Tensor<float> const& x, Positions const& p) {
    rope(x, p);
};
static_assert(RopePositions<Tensor<std::int32_t>> && !RopePositions<Tensor<std::int64_t>> &&
              !RopePositions<Tensor<float>>);

RopeParams rope_params(int n_dims, float freq_base = 10000.0f, std::optional<FTensor> factors = {}) {
    RopeParams p;
    p.n_dims = n_dims;
    p.freq_base = freq_base;
    p.freq_factors = std::move(factors);
    return p;
}

TEST_F(Errors, RopeNamesWhatIsWrong) {
    Tensor<float> const x = Tensor<float>::zeros({2, 3, 4, 8});  // batch 2, seq 3, 4 heads of 8
    Tensor<float> const x_before = x.clone();
    Tensor<std::int32_t> const pos = Tensor<std::int32_t>::from(std::vector<std::int32_t>{0, 1, 2}, {3});
    expect_error<ShapeError>(
        [&] {
            (void)rope(Tensor<float>::zeros({3, 8}), pos);
        },
        {"rope", "rank 3 or more", "[3, 8]"});
    expect_error<ShapeError>([&] { (void)rope(x, pos, rope_params(3)); },
                             {"rope", "n_dims", "even", "head_dim = 8", "got 3"});
    expect_error<ShapeError>([&] { (void)rope(x, pos, rope_params(10)); },
                             {"rope", "n_dims", "head_dim = 8", "got 10"});
    expect_error<ShapeError>([&] { (void)rope(Tensor<float>::zeros({3, 4, 7}), pos); }, {"rope", "even head_dim", "7"});
    Tensor<std::int32_t> const five = Tensor<std::int32_t>::zeros({5});
    expect_error<ShapeError>([&] { (void)rope(x, five); }, {"rope", "positions has 5 entries", "seq = 3", "6"});
    expect_error<ShapeError>([&] { (void)rope(x, pos, rope_params(6, 10000.0f, Tensor<float>::full({4}, 1.0f))); },
                             {"rope", "freq_factors has shape [4]", "expected [3]", "n_dims = 6"});
    expect_error<Error>([&] { (void)rope(x, pos, rope_params(0, 0.0f)); }, {"rope", "freq_base", "> 0"});
    expect_error<Error>([&] { (void)rope(x, pos, rope_params(0, -2.0f)); }, {"rope", "freq_base", "-2"});
    Tensor<float> rope_out = poisoned({2, 3, 4, 8});
    Tensor<float> const rope_out_before = rope_out.clone();
    expect_error<ShapeError>(
        [&] {
            rope_into(x, pos, {}, Tensor<float>::zeros({2, 3, 4, 9}));
        },
        {"rope", "out has shape"});
    for (Device d : Device::all()) {
        if (d.kind() == DeviceKind::cpu) continue;
        expect_error<Error>([&] { rope_into(x, pos.to(d), {}, rope_out); },
                            {"rope", "different devices", "cpu", d.id()});
        expect_error<Error>(
            [&] { rope_into(x, pos, rope_params(0, 10000.0f, Tensor<float>::full({4}, 1.0f).to(d)), rope_out); },
            {"rope", "different devices", d.id()});
    }
    EXPECT_EQ(rope_out.to_vector(), rope_out_before.to_vector());
    EXPECT_EQ(x.to_vector(), x_before.to_vector());
}

Pool2dParams pool_params(std::array<int, 2> kernel, std::array<int, 2> padding = {0, 0},
                         std::optional<std::array<int, 2>> stride = {}) {
    Pool2dParams p;
    p.kernel = kernel;
    p.padding = padding;
    p.stride = stride;
    return p;
}

// The pools check the kernel, stride, padding and the output's size before anything runs.
TEST_F(Errors, PoolsNameWhatIsWrong) {
    Tensor<float> const x = Tensor<float>::zeros({1, 2, 5, 6});
    expect_error<ShapeError>(
        [&] {
            (void)max_pool2d(Tensor<float>::zeros({5, 6}));
        },
        {"max_pool2d", "[N, C, H, W]", "[5, 6]"});
    expect_error<ShapeError>(
        [&] {
            (void)max_pool2d(x, pool_params({0, 2}));
        },
        {"max_pool2d", "kernel must be positive", "(0, 2)"});
    expect_error<ShapeError>(
        [&] {
            (void)avg_pool2d(x, pool_params({2, 2}, {0, 0}, std::array{2, -1}));
        },
        {"avg_pool2d", "stride must be positive", "(2, -1)"});
    expect_error<ShapeError>(
        [&] {
            (void)avg_pool2d(x, pool_params({3, 3}, {2, 1}));
        },
        {"avg_pool2d", "half the kernel", "padding (2, 1)", "kernel (3, 3)"});
    expect_error<ShapeError>(
        [&] {
            (void)max_pool2d(x, pool_params({2, 2}, {-1, 0}));
        },
        {"max_pool2d", "padding (-1, 0)"});
    expect_error<ShapeError>(
        [&] {
            (void)max_pool2d(x, pool_params({8, 2}, {1, 0}));
        },
        {"max_pool2d", "kernel (8, 2)", "larger than the padded input (7, 6)"});
    expect_error<ShapeError>(
        [&] {
            (void)max_pool2d(Tensor<float>::zeros({1, 2, 0, 6}));
        },
        {"max_pool2d", "empty", "[1, 2, 0, 6]"});
    Tensor<float> pool_out = poisoned({1, 2, 2, 3});
    Tensor<float> const pool_out_before = pool_out.clone();
    expect_error<ShapeError>(
        [&] {
            max_pool2d_into(x, pool_params({3, 3}), pool_out);
        },
        {"max_pool2d", "out has shape [1, 2, 2, 3]", "the result has shape [1, 2, 1, 2]"});
    EXPECT_EQ(pool_out.to_vector(), pool_out_before.to_vector());
}

// conv2d's operands hold one element type, which the call's template checks when it compiles.
template <class W>
concept ConvWeights = requires(Tensor<float> const& x, W const& w) {
    conv2d(x, w);
};
static_assert(ConvWeights<Tensor<float>> && !ConvWeights<Tensor<half>> && !ConvWeights<Tensor<bfloat16>>);

TEST_F(Errors, ConvolutionNamesWhatIsWrong) {
    Tensor<float> const x = Tensor<float>::zeros({1, 4, 5, 5}), w = Tensor<float>::zeros({6, 4, 3, 3});
    expect_error<ShapeError>([&] { (void)conv2d(x, w, {.padding = {-1, 0}}); }, {"conv2d", "padding", "(-1, 0)"});
    expect_error<ShapeError>([&] { (void)conv2d(x, w, {.stride = {1, 0}}); }, {"conv2d", "stride", "(1, 0)"});
    expect_error<ShapeError>([&] { (void)conv2d(x, w, {.dilation = {-2, 1}}); }, {"conv2d", "dilation", "(-2, 1)"});
    expect_error<ShapeError>([&] { (void)conv2d(x, w, {.groups = 0}); }, {"conv2d", "groups", "0"});
    expect_error<ShapeError>(
        [&] {
            (void)conv2d(x, Tensor<float>::zeros({6, 1, 3, 3}), {.groups = 3});
        },
        {"conv2d", "groups (3)", "input channels C (4)"});
    expect_error<ShapeError>(
        [&] {
            (void)conv2d(x, Tensor<float>::zeros({3, 2, 3, 3}), {.groups = 2});
        },
        {"conv2d", "groups (2)", "output channels O (3)"});
    expect_error<ShapeError>(
        [&] {
            (void)conv2d(x, Tensor<float>::zeros({6, 2, 3, 3}));
        },
        {"conv2d", "2 input channels per group", "C/groups = 4/1 = 4"});
    expect_error<ShapeError>(
        [&] {
            (void)conv2d(x, Tensor<float>::zeros({6, 4, 7, 3}));
        },
        {"conv2d", "height (7", "padded input's (5 + 2·0 = 5)"});
    expect_error<ShapeError>(
        [&] {
            (void)conv2d(x, w, {.dilation = {1, 3}});
        },
        {"conv2d", "width (3, dilated to 7)", "= 5)"});
    expect_error<ShapeError>([&] { (void)conv2d(x, w, Tensor<float>::zeros({4})); },
                             {"conv2d", "bias", "[4]", "expected [6]"});
    expect_error<ShapeError>(
        [&] {
            (void)conv2d(Tensor<float>::zeros({4, 5}), w);
        },
        {"conv2d", "[N, C, H, W]", "[4, 5]"});
    expect_error<ShapeError>(
        [&] {
            (void)conv2d(x, Tensor<float>::zeros({6, 4, 3}));
        },
        {"conv2d", "[O, C/groups, KH, KW]", "[6, 4, 3]"});
    expect_error<ShapeError>(
        [&] {
            conv2d_into(x, w, {}, Tensor<float>::zeros({1, 6, 4, 3}));
        },
        {"conv2d", "out has shape [1, 6, 4, 3]", "the result has shape [1, 6, 3, 3]"});
    expect_error<ShapeError>(
        [&] {
            (void)convolve2d(Tensor<float>::zeros({4, 5}), Tensor<float>::zeros({6, 2}), ConvolveMode::valid);
        },
        {"convolve2d", "valid", "[4, 5]", "[6, 2]"});
    expect_error<ShapeError>(
        [&] {
            (void)convolve2d(x, Tensor<float>::zeros({3, 3}));
        },
        {"convolve2d", "[H, W]", "[1, 4, 5, 5]"});
    for (Device d : Device::all()) {
        if (d.kind() == DeviceKind::cpu) continue;
        expect_error<Error>([&] { (void)conv2d(x, w.to(d)); }, {"conv2d", "different devices", "cpu", d.id()});
        expect_error<Error>([&] { (void)conv2d(x.to(d), w.to(d), Tensor<float>::zeros({6})); },
                            {"conv2d", "different devices", d.id(), "cpu"});
    }
}

TEST_F(Errors, MatmulInnerDimensionMismatch) {
    expect_error<ShapeError>([&] { (void)matmul(a, b); }, {"inner dimensions", "[2, 3]", "[4, 3]"});
    expect_error<ShapeError>([&] { matmul_into(a, b, out); }, {"inner dimensions"});
    expect_error<ShapeError>([&] { (void)linear(a, Tensor<float>::zeros({5, 4})); }, {"linear", "[2, 3]", "[5, 4]"});
    expect_error<ShapeError>([&] { (void)matmul(Tensor<float>::zeros({2}), b); },
                             {"2 or more axes", "a [2]", "b [4, 3]"});
    expect_error<ShapeError>(
        [&] {
            (void)matmul(Tensor<float>::zeros({2, 5, 3}), Tensor<float>::zeros({3, 3, 4}));
        },
        {"matmul", "batch axes", "[2, 5, 3]", "[3, 3, 4]", "do not broadcast"});
    expect_error<ShapeError>(
        [&] {
            (void)matmul(a, Tensor<float>::zeros({4, 2}), {.transpose_b = true});
        },
        {"matmul", "[4, 2]", "2 columns (transpose_b)"});
    expect_error<ShapeError>([&] { matmul_into(b, a, out, {.transpose_b = true}); },
                             {"matmul", "out has shape [2, 3]", "[4, 2]"});
    expect_error<ShapeError>(
        [&] {
            matmul_into(a, Tensor<float>::zeros({3, 4}), Tensor<half>::zeros({2, 3}));
        },
        {"matmul", "out has shape [2, 3]", "[2, 4]"});
    expect_error<ShapeError>(
        [&] {
            linear_into(a, Tensor<float>::zeros({5, 3}), Tensor<bfloat16>::zeros({2, 3}));
        },
        {"linear", "out has shape [2, 3]", "[2, 5]"});
    Tensor<float> const w = Tensor<float>::zeros({5, 3});
    expect_error<ShapeError>([&] { (void)linear(a, w, Tensor<float>::zeros({3})); },
                             {"linear", "bias", "[3]", "expected [5]"});
    expect_error<ShapeError>([&] { linear_into(a, w, Tensor<float>::zeros({5}), out); },
                             {"linear", "out has shape [2, 3]", "[2, 5]"});
}

TEST_F(Errors, AxisOutOfRange) {
    expect_error<ShapeError>([&] { (void)sum(a, 2); }, {"axis 2", "[2, 3]"});
    expect_error<ShapeError>([&] { (void)argmax(a, -3); }, {"axis -3", "[2, 3]"});
    expect_error<Unsupported>([&] { (void)softmax(a, 0); }, {"last axis"});
    expect_error<ShapeError>([&] { (void)softmax(Tensor<float>::full({}, 1.0f)); }, {"rank-0"});
}

TEST_F(Errors, EmptyTensorWhereAValueIsNeeded) {
    auto e = Tensor<float>::empty({0});
    expect_error<ShapeError>([&] { (void)argmax(e); }, {"argmax", "empty", "[0]"});
    expect_error<ShapeError>([&] { (void)max(e); }, {"max", "empty"});
    expect_error<ShapeError>([&] { (void)argmin(Tensor<float>::empty({3, 0}), 1); }, {"argmin", "[3, 0]"});
    expect_error<ShapeError>([&] { (void)a.item(); }, {"item", "[2, 3]"});
}

TEST_F(Errors, FromWithWrongHostSize) {
    expect_error<ShapeError>(
        [&] {
            (void)Tensor<float>::from(av, {4, 2});
        },
        {"6 host elements", "[4, 2]", "8 elements"});
}

TEST_F(Errors, NegativeAndOverflowingShapes) {
    expect_error<ShapeError>([&] { (void)Tensor<float>::zeros({2, -3}); }, {"negative", "[2, -3]"});
    std::int64_t const big = std::int64_t{1} << 40;
    expect_error<ShapeError>([&] { (void)Tensor<float>::zeros({big, big}); }, {"more elements than can be addressed"});
    expect_error<ShapeError>([&] { (void)Tensor<float>::zeros({std::size_t(-1)}); }, {"64-bit"});
}

TEST_F(Errors, ReshapeToDifferentElementCount) {
    expect_error<ShapeError>([&] { (void)a.reshape({4, 2}); }, {"[2, 3]", "6 elements", "[4, 2]", "8 elements"});
    expect_error<ShapeError>([&] { (void)a.reshape({-1, 4}); }, {"-1"});
    expect_error<ShapeError>([&] { (void)a.slice(1, 3); }, {"slice", "[2, 3]"});
}

TEST_F(Errors, OutputsThatDoNotFit) {
    expect_error<ShapeError>([&] { sum_into(a, 0, false, out); }, {"out has shape [2, 3]", "[3]"});
    auto flat = a.reshape({6});
    expect_error<Error>([&] { relu_into(flat.slice(0, 3), flat.slice(1, 4)); }, {"partially overlaps"});
    expect_error<Error>(
        [&] {
            softmax_into(a, -1, out);
            out = poisoned({2, 3});
            matmul_into(a, Tensor<float>::zeros({3, 3}), a);
        },
        {"overlaps an input"});
}

// One call takes one floating element type: another is a DTypeError naming the op and both types,
// thrown before anything is written (the 16-bit tensors below are checked as the fixture's are).
TEST_F(Errors, MixedElementTypesNameTheOpAndBothTypes) {
    std::vector<half> const hv(av.begin(), av.end());
    std::vector<bfloat16> const bfv(av.begin(), av.end());
    Tensor<half> h = Tensor<half>::from(hv, {2, 3});
    Tensor<bfloat16> bf = Tensor<bfloat16>::from(bfv, {2, 3});
    Tensor<half> h_out = Tensor<half>::full({2, 3}, half(7.0f));
    expect_error<DTypeError>([&] { (void)add(a, h); }, {"add", "b is f16", "a is f32"});
    expect_error<DTypeError>([&] { mul_into(h, h, out); }, {"mul", "out is f32", "a is f16"});
    expect_error<DTypeError>([&] { maximum_into(h, bf, h_out); }, {"maximum", "b is bf16", "a is f16"});
    expect_error<DTypeError>([&] { relu_into(a, h_out); }, {"relu", "out is f16", "x is f32"});
    expect_error<DTypeError>([&] { unary_into(Op::exp, bf, 0.0f, 0.0f, out); }, {"exp", "out is f32", "x is bf16"});
    expect_error<DTypeError>([&] { add_into(h, 1.0f, out); }, {"add", "out is f32", "a is f16"});
    expect_error<DTypeError>([&] { (void)dot(h, a); }, {"dot", "b is f32", "a is f16"});
    expect_error<DTypeError>([&] { softmax_into(h, -1, out); }, {"softmax", "out is f32", "x is f16"});
    expect_error<DTypeError>([&] { log_softmax_into(a, -1, h_out); }, {"log_softmax", "out is f16", "x is f32"});
    Tensor<float> const gamma = Tensor<float>::full({3}, 1.0f);
    Tensor<half> const gamma16 = Tensor<half>::full({3}, half(1.0f));
    expect_error<DTypeError>([&] { (void)rms_norm(h, gamma); }, {"rms_norm", "gamma is f32", "x is f16"});
    expect_error<DTypeError>([&] { layer_norm_into(h, gamma16, gamma16, 1e-5f, out); },
                             {"layer_norm", "out is f32", "x is f16"});
    expect_error<DTypeError>([&] { (void)layer_norm(bf, gamma16, gamma16); },
                             {"layer_norm", "gamma is f16", "x is bf16"});
    EXPECT_EQ(h.to_vector(), hv);
    EXPECT_EQ(bf.to_vector(), bfv);
    for (half v : h_out.to_vector()) EXPECT_EQ(static_cast<float>(v), 7.0f);
}

// attention takes q, k and v of one element type: a mix does not compile.
template <class K>
concept AttentionKeys = requires(Tensor<float> const& q, K const& k) {
    attention(q, k, k);
};
static_assert(AttentionKeys<Tensor<float>> && !AttentionKeys<Tensor<half>> && !AttentionKeys<Tensor<bfloat16>>);

// attention checks its operands and parameters before anything is written.
TEST_F(Errors, AttentionNamesWhatIsWrong) {
    Tensor<float> const q = Tensor<float>::zeros({2, 5, 4, 8}), kv = Tensor<float>::zeros({2, 7, 2, 8});
    Tensor<float> o = poisoned({2, 5, 4, 8});
    expect_error<ShapeError>(
        [&] {
            (void)attention(q.reshape({10, 4, 8}), kv, kv);
        },
        {"attention", "q [10, 4, 8]", "k [2, 7, 2, 8]"});
    expect_error<ShapeError>(
        [&] {
            (void)attention(q.reshape({40, 8}), kv.reshape({28, 8}), kv.reshape({28, 8}));
        },
        {"attention", "[batch, len, heads, head_dim]", "q [40, 8]"});
    expect_error<ShapeError>(
        [&] {
            (void)attention(q, kv, Tensor<float>::zeros({2, 6, 2, 8}));
        },
        {"attention", "one shape", "k [2, 7, 2, 8]", "v [2, 6, 2, 8]"});
    expect_error<ShapeError>(
        [&] {
            (void)attention(q, Tensor<float>::zeros({2, 7, 2, 4}), Tensor<float>::zeros({2, 7, 2, 4}));
        },
        {"attention", "head_dim", "q [2, 5, 4, 8]", "k [2, 7, 2, 4]"});
    expect_error<ShapeError>(
        [&] {
            (void)attention(q, Tensor<float>::zeros({2, 7, 3, 8}), Tensor<float>::zeros({2, 7, 3, 8}));
        },
        {"attention", "heads 4", "kv_heads 3"});
    expect_error<ShapeError>(
        [&] {
            (void)attention(q, Tensor<float>::zeros({1, 7, 2, 8}), Tensor<float>::zeros({1, 7, 2, 8}));
        },
        {"attention", "batch", "q [2, 5, 4, 8]", "k [1, 7, 2, 8]"});
    AttentionParams masked;
    masked.mask = Tensor<float>::zeros({5, 6});
    expect_error<ShapeError>([&] { attention_into(q, kv, kv, masked, o); },
                             {"attention", "mask", "[5, 6]", "does not broadcast", "[2, 4, 5, 7]"});
    masked.mask = Tensor<float>::zeros({3, 1, 1, 7});
    expect_error<ShapeError>([&] { attention_into(q, kv, kv, masked, o); }, {"attention", "mask", "[3, 1, 1, 7]"});
    masked.mask = Tensor<float>::zeros({1, 2, 1, 5, 7});
    expect_error<ShapeError>([&] { attention_into(q, kv, kv, masked, o); }, {"attention", "mask", "[1, 2, 1, 5, 7]"});
    AttentionParams at;
    at.query_offset = -1;
    expect_error<IndexError>([&] { attention_into(q, kv, kv, at, o); }, {"attention", "query_offset -1", "kv_len 7"});
    at.query_offset = 8;
    expect_error<IndexError>([&] { attention_into(q, kv, kv, at, o); }, {"attention", "query_offset 8", "kv_len 7"});
    at.query_offset = 3;
    at.query_position = Tensor<std::int32_t>::zeros({1});
    expect_error<Error>([&] { attention_into(q, kv, kv, at, o); }, {"attention", "query_offset and query_position"});
    AttentionParams stored;
    stored.query_position = Tensor<std::int32_t>::zeros({1});
    expect_error<Error>([&] { attention_into(q, kv, kv, stored, o); }, {"attention", "query_position", "causal"});
    stored.causal = true;
    stored.query_position = Tensor<std::int32_t>::zeros({2});
    expect_error<ShapeError>([&] { attention_into(q, kv, kv, stored, o); },
                             {"attention", "query_position", "one element", "[2]"});
    AttentionParams nan_scale;
    nan_scale.scale = std::numeric_limits<float>::infinity();
    expect_error<Error>([&] { attention_into(q, kv, kv, nan_scale, o); }, {"attention", "scale", "finite"});
    expect_error<ShapeError>(
        [&] {
            attention_into(q, kv, kv, {}, Tensor<float>::zeros({2, 5, 4, 7}));
        },
        {"attention", "out has shape [2, 5, 4, 7]", "[2, 5, 4, 8]"});
    expect_error<Error>([&] { attention_into(q, kv, kv, {}, q); }, {"attention", "overlaps an input"});
    for (Device d : Device::all()) {
        if (d.kind() == DeviceKind::cpu) continue;
        expect_error<Error>([&] { attention_into(q, kv.to(d), kv, {}, o); },
                            {"attention", "different devices", d.id()});
        masked.mask = Tensor<float>::zeros({5, 7}, d);
        expect_error<Error>([&] { attention_into(q, kv, kv, masked, o); }, {"attention", "different devices", d.id()});
        stored.query_position = Tensor<std::int32_t>::zeros({1}, d);
        expect_error<Error>([&] { attention_into(q, kv, kv, stored, o); }, {"attention", "different devices", d.id()});
    }
    for (float v : o.to_vector()) EXPECT_EQ(v, poison);
}

TEST_F(Errors, UnknownCpuArch) {
    expect_error<Error>([&] { set_cpu_arch(static_cast<CpuArch>(42)); }, {"not available"});
}

}  // namespace
}  // namespace rayo::test
