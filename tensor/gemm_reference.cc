// The reference GEMM: three loops over C's rows, columns and the inner dimension, reading op(A)
// and op(B) through their strides. Slow and obviously right: what the BLAS path is tested against.
#include "tensor/gemm.h"

namespace ringgrad::kernels {

template <typename T>
void gemm_reference(const GemmArgs<T>& g) {
  // Element (i, p) of op(A) and (p, j) of op(B), whatever the storage order.
  auto A = [&](std::int64_t i, std::int64_t p) { return g.trans_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p]; };
  auto B = [&](std::int64_t p, std::int64_t j) { return g.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j]; };
  for (std::int64_t i = 0; i < g.m; ++i) {
    T* c_row = g.c + i * g.ldc;
    for (std::int64_t j = 0; j < g.n; ++j) c_row[j] = g.beta == T(0) ? T(0) : g.beta * c_row[j];
    for (std::int64_t p = 0; p < g.k; ++p) {
      const T a_ip = g.alpha * A(i, p);
      for (std::int64_t j = 0; j < g.n; ++j) c_row[j] += a_ip * B(p, j);
    }
  }
}

template void gemm_reference(const GemmArgs<float>&);
template void gemm_reference(const GemmArgs<double>&);

}  // namespace ringgrad::kernels
