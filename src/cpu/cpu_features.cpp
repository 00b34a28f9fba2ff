#include "cpu/cpu_features.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace rayo::cpu {

namespace {

#if defined(__x86_64__) || defined(__i386__)
std::uint64_t xgetbv0() {
    std::uint32_t eax = 0, edx = 0;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<std::uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
    CpuFeatures f;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    bool const sse42 = (c >> 20) & 1;
    bool const fma = (c >> 12) & 1;
    bool const osxsave = (c >> 27) & 1;
    bool const avx = (c >> 28) & 1;
    bool const f16c = (c >> 29) & 1;
    f.sse4_2 = sse42;
    std::uint64_t const xcr0 = osxsave ? xgetbv0() : 0;
    bool const os_ymm = (xcr0 & 0x6) == 0x6;
    bool const os_zmm = (xcr0 & 0xe6) == 0xe6;
    unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
    if (__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7)) {
        bool const avx2 = (b7 >> 5) & 1;
        f.avx2_fma = os_ymm && avx && avx2 && fma && f16c;
        bool const avx512f = (b7 >> 16) & 1, avx512dq = (b7 >> 17) & 1, avx512bw = (b7 >> 30) & 1,
                   avx512vl = (b7 >> 31) & 1;
        f.avx512 = f.avx2_fma && os_zmm && avx512f && avx512dq && avx512bw && avx512vl;
        f.avx512_vnni = f.avx512 && ((c7 >> 11) & 1);
    }
    char brand[49] = {};
    unsigned regs[12] = {};
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
        for (unsigned i = 0; i < 3; ++i)
            __get_cpuid(0x80000002u + i, &regs[i * 4], &regs[i * 4 + 1], &regs[i * 4 + 2], &regs[i * 4 + 3]);
        std::memcpy(brand, regs, 48);
        f.brand = brand;
        while (!f.brand.empty() && f.brand.back() == ' ') f.brand.pop_back();
        while (!f.brand.empty() && f.brand.front() == ' ') f.brand.erase(0, 1);
    }
    if (f.brand.empty()) f.brand = "x86-64 CPU";
    return f;
}
#else
CpuFeatures detect() {
    CpuFeatures f;
    f.brand = "CPU";
    return f;
}
#endif

}  // namespace

CpuFeatures const& cpu_features() {
    static CpuFeatures const features = detect();
    return features;
}

}  // namespace rayo::cpu
