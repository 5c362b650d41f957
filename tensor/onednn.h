// oneDNN's float32 GEMM, loaded by hand, for the products it runs faster than OpenBLAS.
//
// On a Zen 4 EPYC (AVX-512 executed on 256-bit units) oneDNN 2.6's AVX-512 sgemm ran a baby GPT
// step's Linear GEMMs in 10-12% less time than OpenBLAS 0.3.21's SkylakeX kernels, and all of a
// shakespeare-char step's GEMMs (attention's 256 x 256 x 64 products among them) in 5% less; on
// a Zen 5, whose AVX-512 units are full width, a baby step's GEMMs in 2% less. Attention's
// per-head products at T = 64 (2^17 multiply-adds each) stayed faster in OpenBLAS, and with
// AVX2 kernels neither library led (docs/transformer.md, "oneDNN for the Linears").
//
// So gemm() (tensor/gemm.h, cpu_gemm_library) hands oneDNN the float32 products above
// kOneDnnMinMultiplyAdds once set_num_threads(1) has been called, where onednn_sgemm() is not
// null. OpenBLAS keeps the rest: float64 (oneDNN has no dgemm), and every product when GEMMs may
// use more threads, because oneDNN's OpenMP is held at one thread from its load on (two thread
// pools on the same cores would also take turns spinning).
#pragma once

#include <cstdint>

namespace ringgrad::kernels {

/// dnnl_sgemm (dnnl.h): row-major C = alpha op(A) op(B) + beta C with op 'N' or 'T', the
/// strides of the matrices as stored; returns 0 (dnnl_success) or a dnnl_status_t.
using DnnlSgemm = int (*)(char trans_a, char trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                          std::int64_t ldc);

/// Products of more multiply-adds (M N K) than this may go to oneDNN. It sorts by size: at
/// the baby GPT's shapes it lies between attention's 64 x 64 x 32 (2^17) and the smallest
/// Linear, the head (768 x 65 x 128, 6.4 million).
inline constexpr double kOneDnnMinMultiplyAdds = 1 << 20;

/// dnnl_sgemm, or null: when RINGGRAD_ONEDNN is "0", when the CPU has no AVX-512, when
/// libdnnl.so.2 (Debian's libdnnl2) does not load, when its kernels are not AVX-512 ones
/// (DNNL_MAX_CPU_ISA=AVX2, say), or when OpenMP was already loaded with more than one thread.
/// The first call loads the library, setting OMP_NUM_THREADS=1 for the load (the caller's
/// value comes back after it): set_num_threads(1) makes that call early, before a program starts
/// threads that might read the environment. Later calls return the same answer.
DnnlSgemm onednn_sgemm();

}  // namespace ringgrad::kernels
