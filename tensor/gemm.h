// GEMM, the one routine most training time goes to: C = alpha * op(A) op(B) + beta * C,
// row-major, op(X) = X or X^T. Two implementations with one signature: a readable reference
// kernel, and the CPU BLAS (OpenBLAS cblas_?gemm) when the build found one.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ringgrad::kernels {

/// Arguments of one row-major GEMM. op(A) is M x K, op(B) is K x N, C is M x N.
/// lda/ldb/ldc are row strides in elements of the matrices as stored (before op).
template <typename T>
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  T alpha = 1;
  const T* a = nullptr;
  std::int64_t lda = 0;
  const T* b = nullptr;
  std::int64_t ldb = 0;
  T beta = 0;
  T* c = nullptr;
  std::int64_t ldc = 0;
};

/// The textbook triple loop (i, p, j order so the inner loop streams rows of B and C).
/// Slow, obviously correct: the BLAS path is tested against it.
template <typename T>
void gemm_reference(const GemmArgs<T>& g);

/// OpenBLAS cblas_sgemm / cblas_dgemm. Throws std::logic_error when built without BLAS.
template <typename T>
void gemm_blas(const GemmArgs<T>& g);

/// True when the build linked a CPU BLAS.
bool has_blas();
/// The kernel family the BLAS picked for this CPU (OpenBLAS's core name, e.g. "SkylakeX",
/// "Haswell", "Prescott"), or "none" without a BLAS.
const char* blas_core_name();

/// A packed AVX-512 SGEMM (tensor/gemm_avx512.cc), float32 only; needs has_avx512().
void gemm_avx512(const GemmArgs<float>& g);
bool has_avx512();
/// True when the CPU has AVX-512 but the BLAS runs a kernel without it (OpenBLAS 0.3.21 on
/// Sapphire Rapids falls back to SSE3). RINGGRAD_GEMM=avx512 or =blas in the environment
/// forces the choice. Decided once per process.
bool prefer_gemm_avx512();

/// gemm_avx512 where preferred (float32), else gemm_blas when available, else gemm_reference.
template <typename T>
void gemm(const GemmArgs<T>& g) {
  if constexpr (std::is_same_v<T, float>) {
    if (prefer_gemm_avx512()) {
      gemm_avx512(g);
      return;
    }
  }
  if (has_blas()) {
    gemm_blas(g);
  } else {
    gemm_reference(g);
  }
}

}  // namespace ringgrad::kernels
