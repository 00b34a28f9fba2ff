// The softmax family along the last axis: every form of the row shapes, views at offsets (vector
// and scalar paths), rows with -inf entries, rows that are all -inf or hold a NaN or +inf (NaN
// rows), inputs that would overflow exp without the row maximum, and in place; at f32, f16 and
// bf16 (16-bit inputs are random floats rounded to the type, the reference computed from them).
#include "ops/harness.hpp"
#include "ops/references.hpp"
#include "ops/row_shapes.hpp"

#include <cmath>
#include <limits>

namespace rayo::test::ops {
namespace {

template <class T>
void check(CaseContext& ctx, Op op) {
    bool const log = op == Op::log_softmax;
    auto run = [&](std::vector<float> const& values, Shape const& shape, std::size_t in_offset,
                   std::size_t out_offset) {
        SCOPED_TRACE("shape " + shape.to_string() + ", offsets " + std::to_string(in_offset) + "/" +
                     std::to_string(out_offset));
        std::size_t const cols = shape.rank() ? static_cast<std::size_t>(shape[shape.rank() - 1]) : 1;
        std::vector<T> const stored = rounded_to<T>(values);
        std::vector<float> const v(stored.begin(), stored.end());
        Guarded<T> out = ctx.output<T>(shape, out_offset);
        Tensor<T> const x = ctx.input(stored, shape, in_offset);
        if (log)
            log_softmax_into(x, -1, out.tensor());
        else
            softmax_into(x, -1, out.tensor());
        std::vector<double> const want = softmax_ref(v, cols, log);
        std::vector<float> flushed(v);
        for (float& f : flushed) f = flush(f);
        std::vector<double> const want_flushed = ctx.flushes_subnormals() ? softmax_ref(flushed, cols, log) : want;
        ctx.expect_close(out, {.want = [&](std::size_t i) { return want[i]; },
                               .describe =
                                   [&](std::size_t i) {
                                       return "row " + std::to_string(i / cols) + ", column " +
                                              std::to_string(i % cols);
                                   },
                               .scale = [&](std::size_t i) { return std::abs(want[i]) + (log ? 1.0 : 0.0); },
                               .want_flushed = [&](std::size_t i) { return want_flushed[i]; }});
    };
    std::vector<Shape> const shapes = ctx.shapes(row_shapes());
    for (std::size_t s = 0; s < shapes.size(); ++s) {
        std::size_t const offset = s % 3;  // 16-byte aligned views, and views 1 and 2 floats past
        run(ctx.values(shapes[s].numel(), {-6, 9}, Specials::none), shapes[s], offset, offset + 1);
    }
    // Large values (exp would overflow without subtracting the row maximum), and special values:
    // -inf entries give 0 (log: -inf); a row that is all -inf, or holds a NaN or +inf, is NaN.
    run(ctx.values(4 * 1000, {-1e4f, 1e4f}, Specials::none), Shape{4, 1000}, 1, 3);
    std::vector<float> special = ctx.values(8 * 37, {-6, 9}, Specials::ieee);
    float const inf = std::numeric_limits<float>::infinity();
    for (std::size_t c = 0; c < 37; ++c) special[c] = -inf;          // row 0: all -inf
    for (std::size_t c = 0; c < 37; c += 3) special[37 + c] = -inf;  // row 1: some -inf
    run(special, Shape{8, 37}, 0, 1);
    // In place.
    std::vector<T> const v = rounded_to<T>(ctx.values(13 * 300, {-6, 9}, Specials::none));
    Tensor<T> x = ctx.input(v, Shape{13, 300});
    std::vector<T> const want = (log ? log_softmax(x) : softmax(x)).to_vector();
    if (log)
        log_softmax_into(x, -1, x);
    else
        softmax_into(x, -1, x);
    EXPECT_EQ(x.to_vector(), want) << "in place differs from the returning form";
}

template <class T>
void add_cases(std::vector<OpCase>& c) {
    for (Op op : {Op::softmax, Op::log_softmax})
        c.push_back({std::string(to_string(op)) + dtype_suffix<T>(), op, dtype_of<T>,
                     [op](CaseContext& ctx) { check<T>(ctx, op); }});
}

CaseRegistration const registration(floating_cases([]<class T>(std::vector<OpCase>& c) { add_cases<T>(c); }));

}  // namespace
}  // namespace rayo::test::ops
