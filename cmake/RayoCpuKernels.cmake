# The CPU kernels are built once per instruction set, each TU with its own flags; the library
# picks one at run time. Other processors than x86-64 are not supported by the CPU backend yet.
function(rayo_add_cpu_kernels target)
    set(has_sse4_2 0)
    set(has_avx2 0)
    set(has_avx512 0)
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
        set(dir ${CMAKE_CURRENT_SOURCE_DIR}/src/cpu)
        target_sources(${target} PRIVATE ${dir}/kernels_sse4_2.cpp ${dir}/kernels_avx2.cpp ${dir}/kernels_avx512.cpp)
        # -ffp-contract=off: the compiler must not fuse a*b+c on its own. The math kernels rely on
        # rounded products (error-free transformations), and results stay the same whether or not
        # an ISA has FMA; kernels fuse explicitly where they mean to.
        set(common -ffp-contract=off ${RAYO_CPU_KERNEL_FLAGS})
        set_source_files_properties(${dir}/kernels_sse4_2.cpp PROPERTIES COMPILE_OPTIONS "${common};-msse4.2")
        set_source_files_properties(${dir}/kernels_avx2.cpp PROPERTIES COMPILE_OPTIONS "${common};-mavx2;-mfma;-mf16c")
        # GCC 12's avx512fintrin.h reads a deliberately undefined vector (`__m512 __Y = __Y;` in
        # _mm512_undefined_ps, GCC bug 105593), which -Wall reports at every inlined min/max.
        set(gcc_undefined_vector "$<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized;-Wno-uninitialized>")
        set_source_files_properties(${dir}/kernels_avx512.cpp PROPERTIES COMPILE_OPTIONS
            "${common};-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mfma;-mf16c;${gcc_undefined_vector}")
        set(has_sse4_2 1)
        set(has_avx2 1)
        set(has_avx512 1)
    else()
        message(FATAL_ERROR "rayo: the CPU backend needs an x86-64 processor (got ${CMAKE_SYSTEM_PROCESSOR})")
    endif()
    target_compile_definitions(${target} PRIVATE
        RAYO_HAS_CPU_SSE4_2=${has_sse4_2} RAYO_HAS_CPU_AVX2=${has_avx2} RAYO_HAS_CPU_AVX512=${has_avx512})
endfunction()
