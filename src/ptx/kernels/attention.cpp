// The attention generators' configurations, names and sizes (rayo/ptx/kernels/attention.hpp); the
// kernels are in attention_tensor_core.cpp, attention_wgmma.cpp, attention_decode.cpp and
// attention_simt.cpp.
#include "rayo/ptx/kernels/attention.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <string>

#include "ptx/kernels/element_access.hpp"

namespace rayo::ptx::kernels {

namespace detail {
Kernel attention_tensor_core(AttentionConfig const& config);  // attention_tensor_core.cpp
Kernel attention_simt(AttentionConfig const& config);         // attention_simt.cpp
Kernel attention_decode(AttentionConfig const& config);       // attention_decode.cpp
unsigned attention_decode_shared_bytes(AttentionConfig const& config);
Kernel attention_wgmma(AttentionConfig const& config);  // attention_wgmma.cpp
unsigned attention_wgmma_shared_bytes(AttentionConfig const& config);
}  // namespace detail

namespace {

constexpr std::array<unsigned, 5> head_dims{64, 80, 96, 128, 256};

}  // namespace

void check_attention_config(AttentionConfig const& c) {
    std::string const name = "ptx kernel 'attention'";
    element_detail::check_floating(name, c.element);
    bool const tc = c.algorithm != AttentionAlgorithm::simt;  // tensor_core, decode or wgmma
    if (tc && std::ranges::find(head_dims, c.head_dim) == head_dims.end())
        throw BuildError(name + ": head_dim " + std::to_string(c.head_dim) + " is not 64, 80, 96, 128 or 256");
    if (c.head_dim < 1 || c.head_dim > 256)
        throw BuildError(name + ": head_dim " + std::to_string(c.head_dim) + " is not 1 to 256");
    if (c.aligned && c.head_dim * (element_detail::is_16bit(c.element) ? 2 : 4) % 16 != 0)
        throw BuildError(name + ": aligned rows are multiples of 16 bytes");
    if (c.algorithm == AttentionAlgorithm::wgmma) {
        if (!c.aligned) throw BuildError(name + ": wgmma takes aligned operands");
        if (!element_detail::is_16bit(c.element)) throw BuildError(name + ": wgmma takes f16 or bf16");
        if (c.head_dim != 64 && c.head_dim != 128) throw BuildError(name + ": wgmma takes head_dim 64 or 128");
        if (c.warps != 12)
            throw BuildError(name + ": wgmma blocks have 12 warps (a producer and two consumer warpgroups)");
        if (c.mask) throw BuildError(name + ": wgmma reads no mask");
        if (c.partial) throw BuildError(name + ": wgmma writes no partial states");
    } else if (c.algorithm == AttentionAlgorithm::decode) {
        if (!c.aligned) throw BuildError(name + ": decode takes aligned operands");
        if (!element_detail::is_16bit(c.element)) throw BuildError(name + ": decode takes f16 or bf16");
        if (c.warps != 4) throw BuildError(name + ": decode blocks have 4 warps");
        if (c.mask) throw BuildError(name + ": decode reads no mask");
    } else if (tc) {
        if (!c.aligned) throw BuildError(name + ": tensor_core takes aligned operands");
        if (!element_detail::is_16bit(c.element)) throw BuildError(name + ": tensor_core takes f16 or bf16");
        if (c.warps != 4 && c.warps != 8) throw BuildError(name + ": tensor_core blocks have 4 or 8 warps");
        if (c.warp_tiles != 1 && c.warp_tiles != 2)
            throw BuildError(name + ": tensor_core warps take 1 or 2 row tiles");
        if (c.partial) throw BuildError(name + ": tensor_core writes no partial states");
        if (attention_shared_bytes(c) > 227 * 1024)
            throw BuildError(name + ": " + std::to_string(c.warps * 16 * c.warp_tiles) + " query rows of " +
                             std::to_string(c.head_dim) + " need more than 227 KiB of shared memory");
    } else {
        if (c.warps < 1 || c.warps > 8) throw BuildError(name + ": simt blocks have 1 to 8 warps");
        if (c.rows < 1 || c.rows > 8) throw BuildError(name + ": simt warps take 1 to 8 rows");
        if (c.warps * attention_simt_warp_bytes(c) > 227 * 1024)
            throw BuildError(name + ": " + std::to_string(c.warps) +
                             " simt warps need more than 227 KiB of shared memory");
    }
}

std::string attention_name(AttentionConfig const& c) {
    bool const tc = c.algorithm == AttentionAlgorithm::tensor_core, simt = c.algorithm == AttentionAlgorithm::simt;
    char const* const algorithm = tc                                         ? "tc_"
                                  : simt                                     ? "simt_"
                                  : c.algorithm == AttentionAlgorithm::wgmma ? "wgmma_"
                                                                             : "decode_";
    std::string name = std::string("rayo_attention_") + algorithm + std::string(to_string(c.element)) + "_d" +
                       std::to_string(c.head_dim) + "_w" + std::to_string(c.warps);
    if (simt) name += "_r" + std::to_string(c.rows);
    if (tc && c.warp_tiles != 1) name += "_m" + std::to_string(c.warp_tiles);
    if (c.mask) name += "_mask";
    if (c.partial) name += "_partial";
    if (!c.aligned) name += "_u";
    return name;
}

Kernel attention(AttentionConfig const& config) {
    check_attention_config(config);
    switch (config.algorithm) {
        case AttentionAlgorithm::tensor_core: return detail::attention_tensor_core(config);
        case AttentionAlgorithm::decode: return detail::attention_decode(config);
        case AttentionAlgorithm::wgmma: return detail::attention_wgmma(config);
        case AttentionAlgorithm::simt: break;
    }
    return detail::attention_simt(config);
}

unsigned attention_simt_warps(DType element, unsigned head_dim, unsigned rows) {
    AttentionConfig const c{
        .algorithm = AttentionAlgorithm::simt, .element = element, .head_dim = head_dim, .rows = rows};
    return std::clamp(attention_simt_block_budget / attention_simt_warp_bytes(c), 1u, 4u);
}

unsigned attention_shared_bytes(AttentionConfig const& c) {
    if (c.algorithm == AttentionAlgorithm::simt) return c.warps * attention_simt_warp_bytes(c);
    if (c.algorithm == AttentionAlgorithm::decode) return detail::attention_decode_shared_bytes(c);
    if (c.algorithm == AttentionAlgorithm::wgmma) return detail::attention_wgmma_shared_bytes(c);
    unsigned const stride = c.head_dim * 2 + 16;
    return (c.warps * 16 * c.warp_tiles + 4 * 64) * stride;
}

std::uint64_t attention_partial_bytes(std::uint64_t rows, unsigned splits, unsigned head_dim) {
    return rows * splits * (8 + std::uint64_t{head_dim} * 4);
}

std::vector<AttentionConfig> attention_configs(Target target) {
    std::vector<AttentionConfig> configs;
    for (unsigned d : head_dims)
        for (bool mask : {false, true}) {
            for (DType e : {DType::f16, DType::bf16})
                for (auto [warps, tiles] : {std::pair{4u, 1u}, std::pair{8u, 1u}, std::pair{4u, 2u}})
                    configs.push_back({.algorithm = AttentionAlgorithm::tensor_core,
                                       .element = e,
                                       .head_dim = d,
                                       .mask = mask,
                                       .warps = warps,
                                       .warp_tiles = tiles});
            if (!mask)
                for (DType e : {DType::f16, DType::bf16})
                    for (bool partial : {false, true})
                        configs.push_back(
                            {.algorithm = AttentionAlgorithm::decode, .element = e, .head_dim = d, .partial = partial});
            for (DType e : {DType::f32, DType::f16, DType::bf16})
                for (unsigned rows : {1u, 2u, 4u})
                    for (bool partial : {false, true})
                        for (bool aligned : {true, false})
                            configs.push_back({.algorithm = AttentionAlgorithm::simt,
                                               .element = e,
                                               .head_dim = d,
                                               .mask = mask,
                                               .warps = attention_simt_warps(e, d, rows),
                                               .rows = rows,
                                               .partial = partial,
                                               .aligned = aligned});
        }
    if (compute_capability(target) >= 90)
        for (unsigned d : {64u, 128u})
            for (DType e : {DType::f16, DType::bf16})
                configs.push_back({.algorithm = AttentionAlgorithm::wgmma, .element = e, .head_dim = d, .warps = 12});
    // A head_dim the tensor cores do not take, on the simt kernel.
    for (DType e : {DType::f32, DType::f16, DType::bf16})
        configs.push_back({.algorithm = AttentionAlgorithm::simt,
                           .element = e,
                           .head_dim = 40,
                           .warps = attention_simt_warps(e, 40, 4),
                           .rows = 4,
                           .aligned = false});
    return configs;
}

}  // namespace rayo::ptx::kernels
