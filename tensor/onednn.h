// oneDNN's float32 GEMM, loaded by hand, for the products it runs faster than OpenBLAS.
//
// Which products those are depends on the kernels oneDNN runs (docs/transformer.md, "Which GEMM
// library", has the table):
// - AVX-512 kernels: oneDNN 2.6 runs the Linears' large products (above 2^20 multiply-adds) in
//   about a tenth less time than OpenBLAS 0.3.21's SkylakeX kernels; OpenBLAS's small-matrix
//   kernels win on attention's per-head products (2^17 multiply-adds and less at T = 64).
// - AVX2 kernels: oneDNN runs attention's small products faster than OpenBLAS's Haswell kernels,
//   and the NN products (every dx) about as fast, a little faster as a group in training steps;
//   the TN products (every dW) are slower on oneDNN and stay with OpenBLAS.
//
// So gemm() (tensor/gemm.h, cpu_gemm_library) hands oneDNN the float32 products that
// onednn_runs_faster() names, once set_num_threads(1) has been called, where onednn_sgemm() is
// not null. OpenBLAS keeps the rest: float64 (oneDNN has no dgemm), and every product when GEMMs
// may use more threads, because oneDNN's OpenMP is held at one thread from its load on (two
// thread pools on the same cores would also take turns spinning).
#pragma once

#include <cstdint>

namespace ringgrad::kernels {

/// dnnl_sgemm (dnnl.h): row-major C = alpha op(A) op(B) + beta C with op 'N' or 'T', the
/// strides of the matrices as stored; returns 0 (dnnl_success) or a dnnl_status_t.
using DnnlSgemm = int (*)(char trans_a, char trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                          std::int64_t ldc);

/// Products of more multiply-adds (M N K) than this are "large". At the baby GPT's shapes it
/// lies between attention's 64 x 64 x 32 (2^17) and the smallest Linear, the head (768 x 65 x
/// 128, 6.4 million).
inline constexpr double kOneDnnMinMultiplyAdds = 1 << 20;

/// dnnl_sgemm, or null: when RINGGRAD_ONEDNN is "0", when the CPU has no AVX2, when
/// libdnnl.so.2 (Debian's libdnnl2) does not load, when its kernels are below AVX2
/// (DNNL_MAX_CPU_ISA=AVX, say), or when OpenMP was already loaded with more than one thread.
/// The first call loads the library, setting OMP_NUM_THREADS=1 and unsetting OMP_PROC_BIND,
/// OMP_PLACES and GOMP_CPU_AFFINITY for the load (the caller's values come back after it, and no
/// thread is pinned): set_num_threads(1) makes that call early, before a program starts threads
/// that might read the environment. Later calls return the same answer. Throws
/// std::invalid_argument when RINGGRAD_ONEDNN is set to anything but "0" or "1".
DnnlSgemm onednn_sgemm();

/// Whether the kernels behind onednn_sgemm() are AVX-512 ones (else AVX2 ones; false where it is
/// null). DNNL_MAX_CPU_ISA=AVX2 makes an AVX-512 machine run what an AVX2-only one runs.
bool onednn_avx512();

/// Whether oneDNN's kernels (AVX-512 as onednn_avx512() says, else AVX2) ran a product of this
/// kind faster than OpenBLAS's: with AVX-512, every large product; with AVX2, every small one
/// and the large ones with neither operand transposed. `multiply_adds` is M N K.
bool onednn_runs_faster(bool avx512, bool trans_a, bool trans_b, double multiply_adds);

}  // namespace ringgrad::kernels
