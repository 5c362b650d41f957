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

/// True when OpenBLAS was found at build time and loads at run time (tensor/openblas.h).
bool has_blas();
/// The kernel family the BLAS picked for this CPU (OpenBLAS's core name, e.g. "SkylakeX",
/// "Haswell", "Prescott"), or "none" without a BLAS.
const char* blas_core_name();

/// gemm_blas when OpenBLAS is available, else gemm_reference.
template <typename T>
void gemm(const GemmArgs<T>& g) {
  if (has_blas()) {
    gemm_blas(g);
  } else {
    gemm_reference(g);
  }
}

}  // namespace ringgrad::kernels
