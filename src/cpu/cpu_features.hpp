// What the host CPU can run, read with cpuid/xgetbv (the OS must also save the wider registers).
#pragma once

#include <string>

namespace rayo::cpu {

struct CpuFeatures {
    bool sse4_2 = false;
    bool avx2_fma = false;  // AVX2 + FMA3 + F16C
    bool avx512 = false;    // AVX-512 F, BW, DQ, VL
    bool avx512_vnni = false;
    std::string brand;
};

CpuFeatures const& cpu_features();

}  // namespace rayo::cpu
