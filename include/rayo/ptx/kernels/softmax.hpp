// The softmax and log_softmax kernel generator: every row of an f32, f16 or bf16 matrix, normalised.
//
//   using namespace rayo::ptx;
//   kernels::SoftmaxConfig config{.op = rayo::Op::softmax, .row = kernels::choose_row_config(cols, 4)};
//   Kernel k = kernels::softmax(config);
//   std::string ptx = k.emit(Target::sm_90);
//   // launch: kernels::row_grid(config.row, rows) blocks of config.row.block threads
//
// out[r, c] = e^(x - max) / Σ e^(x - max) (softmax) or (x - max) - log Σ e^(x - max) (log), with
// max the row's maximum. The register layouts read a row once and write it once; block_loop keeps
// a running maximum and a sum rescaled as the maximum grows (online softmax), so it reads the row
// twice (the second read normally from L2).
//
// Accuracy: e^(x - max) within about 3 ulp (ex2.approx on an argument carried in two parts, see
// the .cpp), the sum in f32 over a balanced tree per thread and a butterfly across threads; softmax
// multiplies by the correctly rounded reciprocal of the sum, log_softmax subtracts max + log(sum)
// carried as two floats (log: Cephes, 0.85 ulp). A row with -inf entries gives 0 (log: -inf) there;
// a row that is all -inf, or has a NaN or +inf, gives NaN throughout (as the float64 formula does).
//
// Kernel parameters, in order: in, out (.u64 generic addresses of the first row), rows, cols
// (.u32). Rows are contiguous and cols floats apart; cols < 2^31. in may be out (each element is
// read before it is written, by the same thread). Needs sm_80 (max.NaN).
#pragma once

#include <string>

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/op_table.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/kernels/row_layout.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API SoftmaxConfig {
    Op op = Op::softmax;  // softmax or log_softmax
    RowConfig row;        // how a row is spread over threads (choose_row_config)
    // The element type of the rows (and of gamma, beta): f32, f16 or bf16. 16-bit elements are
    // widened to f32 as they are loaded and rounded to nearest even as they are stored; everything
    // between runs in f32 as for f32 rows. A vector of them is 2, 4 or 8 bytes, so rows (and gamma,
    // beta) must be aligned to vector·2 bytes.
    DType element = DType::f32;
};

// The kernel's name spells every generator parameter (e.g. softmax_block_v4_g1_t256_i4,
// log_softmax_group_v1_g8_t128_i2, softmax_block_v4_g1_t256_i4_f16), so equal names mean equal
// kernels.
[[nodiscard]] RAYO_API std::string softmax_name(SoftmaxConfig const& config);

// The kernel. Throws BuildError for a row config the generator does not take (see validate()).
[[nodiscard]] RAYO_API Kernel softmax(SoftmaxConfig const& config);

}  // namespace rayo::ptx::kernels
