// The block-quant kernel generators (rayo/ptx/kernels/quant.hpp): every variant the CUDA backend can
// launch is emitted and assembled by ptxas for sm_80 and sm_90; bad configurations are refused
// with a BuildError that names the problem.
#include <gtest/gtest.h>

#include <rayo/ptx/kernels/quant.hpp>

#include <string>
#include <vector>

#include "support/ptxas.hpp"

namespace rayo::test {
namespace {

using ptx::Kernel;
using ptx::Target;
namespace kernels = ptx::kernels;

constexpr Target targets[] = {Target::sm_80, Target::sm_90};

void expect_all_assemble(std::vector<Kernel> const& variants) {
    for (Target t : targets)
        for (auto const& kernel : variants) {
            SCOPED_TRACE(kernel.name() + " for " + std::string(ptx::to_string(t)));
            expect_assembles(kernel, t);
        }
}

TEST(PtxQuant, DequantizeAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    std::vector<Kernel> v;
    for (DType t : {DType::q4_k, DType::q6_k, DType::q8_k, DType::q5_k, DType::q8_0, DType::q4_0})
        for (ptx::Type output : {ptx::Type::f32, ptx::Type::f16})
            v.push_back(kernels::dequantize({.type = t, .output = output}));
    expect_all_assemble(v);
}

TEST(PtxQuant, QuantizeQ8Assembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    expect_all_assemble({kernels::quantize_q8()});
}

TEST(PtxQuant, ActivationRecordsAssemble) {
    RAYO_SKIP_WITHOUT_PTXAS();
    std::vector<Kernel> v;
    for (DType t : {DType::q4_k, DType::q6_k, DType::q5_k, DType::q8_0, DType::q4_0})
        for (bool residual : {true, false})
            v.push_back(kernels::quantize_activations({.weight = t, .residual = residual}));
    expect_all_assemble(v);
}

// Every GEMV the CUDA backend can pick (rows 1-8, with and without the residual, unroll 2 and 4),
// assembled as one module per target so ptxas starts once.
TEST(PtxQuant, GemvAssemblesForEveryRowCount) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : targets) {
        ptx::Module module(t);
        for (DType type : {DType::q4_k, DType::q6_k, DType::q5_k, DType::q8_0, DType::q4_0})
            for (bool residual : {true, false})
                for (unsigned unroll : {2u, 4u})
                    for (unsigned rows = 1; rows <= 8; ++rows)
                        module.add(kernels::quant_gemv(
                            {.weight = type, .rows = rows, .residual = residual, .unroll = unroll}));
        // The fused GEMVs the backend picks for 1-2 rows of x (32 warps, unroll 2).
        for (DType type : {DType::q4_k, DType::q6_k, DType::q5_k})
            for (bool residual : {true, false})
                for (unsigned rows = 1; rows <= 2; ++rows)
                    module.add(kernels::quant_gemv(
                        {.weight = type, .rows = rows, .residual = residual, .warps = 32, .unroll = 2, .fused = true}));
        // The streamed fused GEMVs (cp.async rings; the ring depth and warp count change only constants,
        // so two of the four combinations the backend picks from).
        for (DType type : {DType::q4_k, DType::q6_k, DType::q5_k})
            for (bool residual : {true, false})
                for (unsigned rows = 1; rows <= 2; ++rows) {
                    module.add(kernels::quant_gemv(
                        {.weight = type, .rows = rows, .residual = residual, .warps = 32, .fused = true, .stages = 4}));
                    module.add(kernels::quant_gemv(
                        {.weight = type, .rows = rows, .residual = residual, .warps = 16, .fused = true, .stages = 3}));
                }
        // The other shapes the configuration allows.
        for (DType type : {DType::q4_k, DType::q6_k, DType::q5_k}) {
            module.add(kernels::quant_gemv({.weight = type, .rows = 3, .warps = 8, .unroll = 1}));
            module.add(kernels::quant_gemv({.weight = type, .rows = 1, .warps = 2, .fused = true, .stages = 2}));
        }
        for (DType type : {DType::q8_0, DType::q4_0})
            module.add(kernels::quant_gemv({.weight = type, .rows = 3, .warps = 8, .unroll = 1}));
        std::string const failure = ptxas_failure("rayo_quant_gemv_all", module.emit(), t);
        EXPECT_TRUE(failure.empty()) << failure;
    }
}

// The spanning GEMV at the row lengths the backend meets most (k = 256 .. 32768), every batch, with
// the weights loaded into registers (with and without the pipelined loads) and streamed through
// rings of 2, 4 and 16 stages (q4_k and q6_k), x shared through shared memory or quantized by each
// thread, and the block shapes the glue picks (several groups for short rows, one for long ones).
TEST(PtxQuant, SpanningGemvAssemblesForEveryBatchAndRowLength) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : targets) {
        ptx::Module module(t);
        for (unsigned blocks : {1u, 9u, 16u, 56u, 128u})
            for (unsigned batch : {1u, 2u, 4u})
                for (unsigned stages : {0u, 2u, 4u, 16u}) {
                    unsigned const groups = std::max(1u, 512u / kernels::quant_gemv_spanning_group_threads(blocks));
                    kernels::QuantGemvSpanningConfig const config{
                        .blocks_per_row = blocks, .groups = groups, .batch = batch, .stages = stages};
                    module.add(kernels::quant_gemv_spanning(config));
                    if (stages == 0)
                        module.add(kernels::quant_gemv_spanning(
                            {.blocks_per_row = blocks, .groups = groups, .batch = batch, .pipelined = false}));
                    kernels::QuantGemvSpanningConfig own_x = config;
                    own_x.share_x = false;
                    module.add(kernels::quant_gemv_spanning(own_x));
                    if (stages > 0 && blocks % 8 == 0) {
                        kernels::QuantGemvSpanningConfig q6 = config;
                        q6.weight = DType::q6_k;
                        module.add(kernels::quant_gemv_spanning(q6));
                        q6.share_x = false;
                        module.add(kernels::quant_gemv_spanning(q6));
                        if (compute_capability(t) >= 90) {
                            q6.prefetch_steps = 2;
                            q6.early_start = true;
                            module.add(kernels::quant_gemv_spanning(q6));
                        }
                    }
                    // As the glue launches it on sm_90: prefetched, started early, and (blocks of
                    // up to 512 threads) with room for the next step's loads.
                    if (compute_capability(t) >= 90) {
                        kernels::QuantGemvSpanningConfig early = config;
                        early.prefetch_steps = stages == 16 ? kernels::quant_gemv_spanning_max_prefetch_steps : 1;
                        early.early_start = true;
                        if (groups * kernels::quant_gemv_spanning_group_threads(blocks) <= 512)
                            early.max_registers = 128;
                        module.add(kernels::quant_gemv_spanning(early));
                        // Weights requested before the wait: the pipelined form's first step, a
                        // ring's first step or (batch 2) all of its first stages − 1.
                        kernels::QuantGemvSpanningConfig weights_first = early;
                        weights_first.weight_steps_before_wait = stages > 0 && batch == 2 ? stages - 1 : 1;
                        module.add(kernels::quant_gemv_spanning(weights_first));
                        // x loaded before the wait as well, from shared memory or into registers.
                        kernels::QuantGemvSpanningConfig x_first = weights_first;
                        x_first.x_before_wait = true;
                        module.add(kernels::quant_gemv_spanning(x_first));
                        x_first.share_x = false;
                        module.add(kernels::quant_gemv_spanning(x_first));
                        // Whole steps through bulk copies, both types.
                        if (stages > 0) {
                            kernels::QuantGemvSpanningConfig bulk = early;
                            bulk.stages = stages;
                            bulk.bulk = true;
                            module.add(kernels::quant_gemv_spanning(bulk));
                            if (blocks % 8 == 0) {
                                bulk.weight = DType::q6_k;
                                bulk.max_registers = 0;
                                module.add(kernels::quant_gemv_spanning(bulk));
                                bulk.weight_steps_before_wait = batch == 4 ? stages - 1 : 1;
                                module.add(kernels::quant_gemv_spanning(bulk));
                                bulk.x_before_wait = true;
                                bulk.share_x = false;
                                module.add(kernels::quant_gemv_spanning(bulk));
                            }
                        }
                    }
                }
        std::string const failure = ptxas_failure("rayo_quant_gemv_spanning_all", module.emit(), t);
        EXPECT_TRUE(failure.empty()) << failure;
    }
}

// The spanning GEMV of q5_k (q4_k's forms: registers, pipelined or not, rings) and of q8_0 / q4_0
// (rings, and on sm_90 bulk copies, started early), at the row lengths of the test above, x shared or
// each thread's own.
TEST(PtxQuant, SpanningGemvOfQ5kQ80Q40Assembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : targets) {
        ptx::Module module(t);
        for (unsigned blocks : {1u, 9u, 16u, 56u, 128u})
            for (unsigned batch : {1u, 2u, 4u})
                for (bool share_x : {true, false}) {
                    unsigned const groups = std::max(1u, 512u / kernels::quant_gemv_spanning_group_threads(blocks));
                    for (unsigned stages : {0u, 2u}) {
                        kernels::QuantGemvSpanningConfig const q5{.weight = DType::q5_k,
                                                                  .blocks_per_row = blocks,
                                                                  .groups = groups,
                                                                  .batch = batch,
                                                                  .stages = stages,
                                                                  .share_x = share_x};
                        module.add(kernels::quant_gemv_spanning(q5));
                    }
                    for (DType weight : {DType::q8_0, DType::q4_0}) {
                        kernels::QuantGemvSpanningConfig small{.weight = weight,
                                                               .blocks_per_row = blocks,
                                                               .groups = groups,
                                                               .batch = batch,
                                                               .stages = 2,
                                                               .share_x = share_x};
                        module.add(kernels::quant_gemv_spanning(small));
                        if (compute_capability(t) >= 90) {
                            small.stages = 4;
                            small.prefetch_steps = 2;
                            small.early_start = true;
                            small.bulk = true;
                            module.add(kernels::quant_gemv_spanning(small));
                        }
                    }
                }
        std::string const failure = ptxas_failure("rayo_quant_gemv_spanning_q5_k_q8_0_q4_0", module.emit(), t);
        EXPECT_TRUE(failure.empty()) << failure;
    }
}

// The spanning GEMV with linear's bias and with each formed input (swiglu_linear, rms_norm_linear),
// x shared through shared memory or held by each thread, q4_k and q5_k from registers and q6_k, q8_0
// and q4_0 from rings and (sm_90, started early) bulk copies, as the glue launches them.
TEST(PtxQuant, SpanningGemvWithBiasAndFormedInputsAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target t : targets) {
        ptx::Module module(t);
        for (auto input : {kernels::GemvInput::x, kernels::GemvInput::swiglu, kernels::GemvInput::rms_norm})
            for (bool share_x : {true, false})
                for (DType weight : {DType::q4_k, DType::q5_k, DType::q6_k, DType::q8_0, DType::q4_0}) {
                    bool const q6 = weight == DType::q6_k || kernels::small_block_weights(weight);  // rings
                    kernels::QuantGemvSpanningConfig config{.weight = weight,
                                                            .blocks_per_row = 16,
                                                            .groups = share_x ? 4u : 1u,
                                                            .batch = 2,
                                                            .stages = q6 ? 2u : 0u,
                                                            .share_x = share_x,
                                                            .bias = true,
                                                            .input = input};
                    module.add(kernels::quant_gemv_spanning(config));
                    if (compute_capability(t) >= 90) {
                        config.prefetch_steps = 2;
                        config.early_start = true;
                        config.bulk = q6;
                        config.stages = q6 ? 4u : 0u;
                        config.x_before_wait = share_x;
                        module.add(kernels::quant_gemv_spanning(config));
                    }
                }
        std::string const failure = ptxas_failure("rayo_quant_gemv_spanning_formed", module.emit(), t);
        EXPECT_TRUE(failure.empty()) << failure;
    }
}

TEST(PtxQuant, SpanningGemvSharedMemoryHoldsXTheRingsAndEveryStepsWarpSums) {
    // 56 blocks: 448 threads = 14 warps; x 28672 bytes, 56 scales in 224 bytes, 8 steps of 2 rows × 14 sums.
    EXPECT_EQ(kernels::quant_gemv_spanning_group_threads(56), 448u);
    EXPECT_EQ(kernels::quant_gemv_spanning_group_threads(9), 96u);
    EXPECT_EQ(kernels::quant_gemv_spanning_shared_bytes({.blocks_per_row = 56, .groups = 1, .batch = 2}, 8),
              28672u + 224u + 8u * 2 * 14 * 4);
    // x quantized by each thread from global memory: the sums alone.
    EXPECT_EQ(
        kernels::quant_gemv_spanning_shared_bytes({.blocks_per_row = 56, .groups = 1, .batch = 2, .share_x = false}, 8),
        8u * 2 * 14 * 4);
    // 16 blocks in 4 groups of 4 warps: 7 steps of 4·2 rows × 4 sums.
    EXPECT_EQ(kernels::quant_gemv_spanning_shared_bytes({.blocks_per_row = 16, .groups = 4, .batch = 2}, 7),
              8192u + 64u + 7u * 8 * 4 * 4);
    // Streamed: 16 warps × 4 stages × 2 rows of 576 bytes (q4_k) or 848 (q6_k) more.
    EXPECT_EQ(
        kernels::quant_gemv_spanning_shared_bytes({.blocks_per_row = 16, .groups = 4, .batch = 2, .stages = 4}, 7),
        8192u + 64u + 16u * 4 * 2 * 576 + 7u * 8 * 4 * 4);
    EXPECT_EQ(
        kernels::quant_gemv_spanning_shared_bytes(
            {.weight = DType::q6_k, .blocks_per_row = 16, .groups = 4, .batch = 2, .stages = 4, .share_x = false}, 7),
        16u * 4 * 2 * 848 + 7u * 8 * 4 * 4);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.weight = DType::q8_k, .stages = 2}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.weight = DType::q6_k, .blocks_per_row = 8}),
                 ptx::BuildError);  // stages 0
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.weight = DType::q6_k, .blocks_per_row = 9, .stages = 2}),
                 ptx::BuildError);  // rows not 16-byte multiples
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .stages = 1}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .stages = 17}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 0}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 129}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 56, .groups = 3}),
                 ptx::BuildError);  // 1344 threads
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .batch = 3}), ptx::BuildError);
    // Weights before the wait: only for a kernel that starts early, and no more steps than the form
    // requests first (the pipelined form 1, a ring stages − 1, registers without pipelining none).
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .weight_steps_before_wait = 1}),
                 ptx::BuildError);
    EXPECT_THROW(
        (void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .early_start = true, .weight_steps_before_wait = 2}),
        ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning(
                     {.blocks_per_row = 16, .stages = 4, .early_start = true, .weight_steps_before_wait = 4}),
                 ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning(
                     {.blocks_per_row = 16, .pipelined = false, .early_start = true, .weight_steps_before_wait = 1}),
                 ptx::BuildError);
    EXPECT_NO_THROW((void)kernels::quant_gemv_spanning(
        {.blocks_per_row = 16, .stages = 4, .early_start = true, .weight_steps_before_wait = 3}));
    // x before the wait: likewise only for a kernel that starts early.
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .x_before_wait = true}), ptx::BuildError);
    EXPECT_NO_THROW(
        (void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .early_start = true, .x_before_wait = true}));
    // .maxnreg must let the block fit the register file; prefetches are bounded.
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 128, .max_registers = 128}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .max_registers = 16}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .max_registers = 256}), ptx::BuildError);
    EXPECT_NO_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 64, .max_registers = 128}));  // 512 threads
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .prefetch_steps = 17}), ptx::BuildError);
    // Early start and bulk prefetches exist on sm_90 only: refused for sm_80 before ptxas sees them.
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .early_start = true}).emit(Target::sm_80),
                 ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .prefetch_steps = 1}).emit(Target::sm_80),
                 ptx::BuildError);
    // So are bulk copies; and they need a ring of at least two slots.
    EXPECT_THROW(
        (void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .stages = 2, .bulk = true}).emit(Target::sm_80),
        ptx::BuildError);
    EXPECT_NO_THROW(
        (void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .stages = 2, .bulk = true}).emit(Target::sm_90));
    EXPECT_THROW((void)kernels::quant_gemv_spanning({.blocks_per_row = 16, .bulk = true}), ptx::BuildError);
    // Bulk slots hold whole steps: x, stages · (rows · row bytes + 16), two barriers a slot, the sums.
    EXPECT_EQ(kernels::quant_gemv_spanning_shared_bytes({.weight = DType::q6_k,
                                                         .blocks_per_row = 16,
                                                         .groups = 1,
                                                         .batch = 2,
                                                         .stages = 4,
                                                         .share_x = false,
                                                         .bulk = true},
                                                        7),
              4u * (2 * 3360 + 16) + 16 * 4 + 7 * 2 * 4 * 4);
}

TEST(PtxQuant, GemmAssemblesForEveryTile) {
    RAYO_SKIP_WITHOUT_PTXAS();
    std::vector<Kernel> v{kernels::gemm_activations()};
    for (DType t : {DType::q4_k, DType::q6_k})
        for (unsigned bm : {64u, 128u})
            for (unsigned bn : {64u, 128u})
                v.push_back(kernels::quant_gemm({.weight = t, .block_m = bm, .block_n = bn}));
    expect_all_assemble(v);
}

TEST(PtxQuant, GemmSharedMemoryIsTwoStagesOfBothTiles) {
    EXPECT_EQ(kernels::quant_gemm_shared_bytes({.block_m = 128, .block_n = 128}), 2u * (128 + 128) * 128);
    EXPECT_EQ(kernels::quant_gemm_shared_bytes({.block_m = 64, .block_n = 128}), 2u * (64 + 128) * 128);
}

TEST(PtxQuant, ActivationRecordSizesKeepRecordsAligned) {
    EXPECT_EQ(kernels::activation_record_bytes(DType::q4_k), 640u);
    EXPECT_EQ(kernels::activation_record_bytes(DType::q6_k), 768u);
    EXPECT_EQ(kernels::activation_record_bytes(DType::q4_k) % 16, 0u);
    for (DType t : {DType::q5_k, DType::q8_0, DType::q4_0}) EXPECT_EQ(kernels::activation_record_bytes(t), 640u);
    EXPECT_EQ(kernels::quant_gemv_slot_bytes(DType::q5_k), 8u * 176);
    EXPECT_EQ(kernels::dequantize_blocks_per_warp(DType::q8_0), 8u);
    EXPECT_EQ(kernels::dequantize_blocks_per_warp(DType::q5_k), 1u);
}

// The generated text uses the instructions the design rests on.
TEST(PtxQuant, KernelsUseTheIntendedInstructions) {
    std::string const gemv = kernels::quant_gemv({.weight = DType::q4_k, .rows = 1}).emit(Target::sm_90);
    EXPECT_NE(gemv.find("dp4a.u32.s32"), std::string::npos);
    EXPECT_NE(gemv.find("dp2a.lo.s32.u32"), std::string::npos);
    EXPECT_NE(gemv.find("ld.global.nc.v4.u32"), std::string::npos);
    EXPECT_NE(gemv.find("shfl.sync.bfly.b32"), std::string::npos);
    std::string const gemv6 = kernels::quant_gemv({.weight = DType::q6_k, .rows = 1}).emit(Target::sm_90);
    EXPECT_NE(gemv6.find("dp4a.s32.s32"), std::string::npos);
    EXPECT_NE(gemv6.find("prmt.b32"), std::string::npos);
    std::string const fused =
        kernels::quant_gemv({.weight = DType::q4_k, .warps = 32, .fused = true}).emit(Target::sm_90);
    EXPECT_NE(fused.find("prefetch.global.L2"), std::string::npos);
    EXPECT_NE(fused.find("st.shared.v2.b32"), std::string::npos);
    EXPECT_NE(fused.find("ld.shared.v4.b32"), std::string::npos);
    EXPECT_NE(fused.find("bar.sync"), std::string::npos);
    EXPECT_EQ(fused.find("records"), std::string::npos);  // x is the parameter
    std::string const streamed =
        kernels::quant_gemv({.weight = DType::q6_k, .warps = 32, .fused = true, .stages = 3}).emit(Target::sm_90);
    EXPECT_NE(streamed.find("cp.async.cg.shared.global"), std::string::npos);
    EXPECT_NE(streamed.find("cp.async.wait_group 1"), std::string::npos);
    EXPECT_NE(streamed.find("bar.warp.sync"), std::string::npos);
    EXPECT_NE(streamed.find("ld.shared.u32"), std::string::npos);  // q6_k words from the ring
    // q8_0: signed weights × signed activations; q4_0: unsigned nibbles; both re-assemble 2-byte
    // aligned blocks by prmt.
    std::string const gemv8 = kernels::quant_gemv({.weight = DType::q8_0, .rows = 1}).emit(Target::sm_90);
    EXPECT_NE(gemv8.find("dp4a.s32.s32"), std::string::npos);
    EXPECT_NE(gemv8.find("prmt.b32"), std::string::npos);
    std::string const gemv40 = kernels::quant_gemv({.weight = DType::q4_0, .rows = 1}).emit(Target::sm_90);
    EXPECT_NE(gemv40.find("dp4a.u32.s32"), std::string::npos);
    std::string const gemm = kernels::quant_gemm({.weight = DType::q6_k}).emit(Target::sm_80);
    EXPECT_NE(gemm.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos);
    EXPECT_NE(gemm.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), std::string::npos);
    EXPECT_NE(gemm.find("cp.async.cg.shared.global"), std::string::npos);
    // Exactness of dequantize: products and differences, never a fused multiply-add.
    for (DType t : {DType::q4_k, DType::q6_k, DType::q8_k, DType::q5_k, DType::q8_0, DType::q4_0}) {
        std::string const deq = kernels::dequantize({.type = t}).emit(Target::sm_90);
        EXPECT_EQ(deq.find("fma."), std::string::npos) << to_string(t);
    }
}

TEST(PtxQuant, BadConfigurationsAreRefused) {
    EXPECT_THROW((void)kernels::dequantize({.type = DType::f32}), ptx::BuildError);
    EXPECT_THROW((void)kernels::dequantize({.type = DType::q4_k, .threads = 48}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quantize_activations({.weight = DType::q8_k}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q8_0, .fused = true}), ptx::BuildError);  // records only
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q4_0, .warps = 32, .fused = true, .stages = 3}),
                 ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q8_k}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q4_k, .rows = 0}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q4_k, .rows = 9}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q4_k, .unroll = 3}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q4_k, .stages = 3}), ptx::BuildError);  // not fused
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q4_k, .fused = true, .stages = 1}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemv({.weight = DType::q4_k, .fused = true, .stages = 9}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemm({.weight = DType::f16}), ptx::BuildError);
    EXPECT_THROW((void)kernels::quant_gemm({.weight = DType::q4_k, .block_m = 32}), ptx::BuildError);
}

}  // namespace
}  // namespace rayo::test
