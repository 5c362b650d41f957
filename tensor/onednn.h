// oneDNN's float32 GEMM, loaded by hand at first use, for the products it runs faster than
// OpenBLAS.
//
// On a Zen 4 EPYC (AVX-512 executed on 256-bit units) oneDNN 2.6's AVX-512 sgemm ran a baby GPT
// step's Linear GEMMs in 10-12% less time than OpenBLAS 0.3.21's SkylakeX kernels, and 5% less
// at the larger shakespeare-char shapes (on a Zen 5, whose AVX-512 units are full width, 2% over
// a step's GEMMs); attention's per-head products at T = 64 (2^17 multiply-adds each) stayed
// faster in OpenBLAS, and with AVX2 kernels neither library led (docs/transformer.md, "Which
// GEMM library"). So gemm() (tensor/gemm.h) hands oneDNN the float32
// products above kOneDnnMinMultiplyAdds, when its kernels are AVX-512 ones and the GEMMs run on
// one thread; OpenBLAS keeps the rest, float64 (oneDNN has no dgemm) and multi-threaded GEMMs
// (oneDNN's OpenMP pool and OpenBLAS's own would take turns spinning on the same cores).
#pragma once

#include <cstdint>

namespace ringgrad::kernels {

/// dnnl_sgemm (dnnl.h): row-major C = alpha op(A) op(B) + beta C with op 'N' or 'T', the
/// strides of the matrices as stored; returns 0 (dnnl_success) or a dnnl_status_t.
using DnnlSgemm = int (*)(char trans_a, char trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                          std::int64_t ldc);

/// Products of more multiply-adds (M N K) than this go to oneDNN where onednn() is not null.
/// Between attention's 64 x 64 x 32 (2^17, faster in OpenBLAS) and the smallest Linear of the
/// baby GPT, its head (768 x 65 x 128, 6.4 million).
inline constexpr double kOneDnnMinMultiplyAdds = 1 << 20;

/// dnnl_sgemm when libdnnl.so.2 (Debian's libdnnl2) loads and its kernels are AVX-512 ones
/// (not on AVX2-only CPUs, nor under DNNL_MAX_CPU_ISA=AVX2), unless RINGGRAD_ONEDNN=0; null
/// otherwise. Loaded once per process, thread-safely, with OpenMP read at one thread.
DnnlSgemm onednn_sgemm();

}  // namespace ringgrad::kernels
