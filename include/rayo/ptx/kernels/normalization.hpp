// The layer_norm and rms_norm kernel generator: every row of an f32, f16 or bf16 matrix normalised, then
// optionally scaled by gamma and shifted by beta (one value per column).
//
//   using namespace rayo::ptx;
//   kernels::NormConfig config{.op = rayo::Op::layer_norm, .row = kernels::choose_row_config(cols, 4)};
//   Kernel k = kernels::normalization(config);
//   // launch: kernels::row_grid(config.row, rows) blocks of config.row.block threads
//
// layer_norm: y = (x - mean)/sqrt(var + eps)·gamma + beta, var the biased variance.
// rms_norm:   y = x/sqrt(mean(x²) + eps)·gamma.
//
// The row is held in registers and read once (or, in block_loop, read again per pass: layer_norm
// three times, rms_norm twice, the re-reads normally from L2). layer_norm takes two statistics
// passes: the mean c (the f32 sum times the correctly rounded 1/cols), then Σ(x - c) and
// Σ(x - c)², so var = Σ(x - c)²/n - t² with t = Σ(x - c)/n, and y is centred on c + t: rows whose
// mean is far larger than their spread keep their accuracy (as the CPU kernels' correction does).
// 1/sqrt(var + eps) is sqrt.rn then rcp.rn. Sums run in f32 over a balanced tree per thread and a
// butterfly across threads in a fixed order, with no atomics: the same bits on every run. y is
// formed as the CPU forms it: layer_norm fma(fma(x - c, rstd, -t·rstd), gamma, beta), rms_norm
// (x·rstd)·gamma, with gamma = 1 and beta = 0 where absent.
//
// Kernel parameters, in order: in, gamma, beta, out (.u64 generic addresses), rows, cols (.u32),
// eps (.f32). gamma and beta hold cols floats each, or are 0 when absent (a uniform predicate
// skips their loads; rms_norm never reads beta). Rows are contiguous, cols floats apart,
// cols < 2^31; with vector > 1, gamma and beta must be aligned like the rows. in may be out.
#pragma once

#include <cstdint>
#include <string>

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/op_table.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/kernels/row_layout.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API NormConfig {
    Op op = Op::layer_norm;  // layer_norm or rms_norm
    RowConfig row;           // how a row is spread over threads (choose_row_config)
    // The element type of the rows (and of gamma, beta): f32, f16 or bf16. 16-bit elements are
    // widened to f32 as they are loaded and rounded to nearest even as they are stored; everything
    // between runs in f32 as for f32 rows. A vector of them is 2, 4 or 8 bytes, so rows (and gamma,
    // beta) must be aligned to vector·2 bytes.
    DType element = DType::f32;
};

// The kernel's name spells every generator parameter (e.g. layer_norm_block_v4_g1_t256_i4,
// rms_norm_group_v1_g4_t128_i2, rms_norm_group_v1_g4_t128_i2_bf16), so equal names mean equal
// kernels.
[[nodiscard]] RAYO_API std::string normalization_name(NormConfig const& config);

// The kernel. Throws BuildError for a row config the generator does not take (see validate()).
[[nodiscard]] RAYO_API Kernel normalization(NormConfig const& config);

}  // namespace rayo::ptx::kernels
