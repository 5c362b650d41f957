// GEMM, the one routine most training time goes to: C = alpha * op(A) op(B) + beta * C,
// row-major, op(X) = X or X^T. Four implementations behind gemm(): a readable reference kernel,
// the CPU BLAS (OpenBLAS cblas_?gemm) when the build found one, oneDNN's sgemm for the
// float32 products it runs faster (tensor/onednn.h), and cuBLAS on a GPU (tensor/cublas.h).
// gemm() and gemm_batched() apply the matmul precision (tensor/precision.h).
#pragma once

#include <cstdint>

#include "tensor/device.h"

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

/// The CPU libraries a product can run on.
enum class CpuGemmLibrary { kReference, kOpenBlas, kOneDnn };

/// Which library gemm() runs `g` on: oneDNN's sgemm for a float32 product it runs faster
/// (onednn_runs_faster: with AVX-512 kernels those of more than 2^20 multiply-adds, with AVX2
/// ones the smaller products and the NN ones) after set_num_threads(1), where onednn_sgemm() is
/// not null (tensor/onednn.h); otherwise OpenBLAS when it loads, else the reference kernel,
/// which also takes every empty product (M, N or K zero: C becomes beta C, as BLAS says).
template <typename T>
CpuGemmLibrary cpu_gemm_library(const GemmArgs<T>& g);
/// "oneDNN", "OpenBLAS" or "reference".
const char* library_name(CpuGemmLibrary library);

/// The CPU GEMM the tensor ops call, on cpu_gemm_library(g). At bf16 matmul precision, float
/// operands are first rounded to bf16 values (copies; an emulation of bf16 inputs with float32
/// accumulation that brings no speedup). Throws std::runtime_error if oneDNN returns an error.
template <typename T>
void gemm(const GemmArgs<T>& g);

/// `count` GEMMs of one shape: entry i reads a + i stride_a and b + i stride_b and writes
/// c + i stride_c (elements; a stride may be 0 to reuse an operand).
struct GemmBatch {
  std::int64_t count = 1, stride_a = 0, stride_b = 0, stride_c = 0;
};

/// The batch on `device`, whose memory g's pointers address: gemm() per entry on the CPU, one
/// strided-batched cuBLAS call on a GPU (tensor/cublas.h).
template <typename T>
void gemm_batched(Device device, const GemmArgs<T>& g, const GemmBatch& batch = {});

/// Elements from the first to the last one a GEMM operand reads: `rows` x `cols` as stored
/// (before op), row stride `ld`. What a precision conversion of the operand has to cover.
inline std::int64_t operand_span(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
}
template <typename T>
std::int64_t span_a(const GemmArgs<T>& g) {
  return g.trans_a ? operand_span(g.k, g.m, g.lda) : operand_span(g.m, g.k, g.lda);
}
template <typename T>
std::int64_t span_b(const GemmArgs<T>& g) {
  return g.trans_b ? operand_span(g.n, g.k, g.ldb) : operand_span(g.k, g.n, g.ldb);
}

}  // namespace ringgrad::kernels
