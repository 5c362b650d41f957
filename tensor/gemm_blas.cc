// GEMM through OpenBLAS's cblas_sgemm and cblas_dgemm, loaded at first use (tensor/openblas.h);
// in a build without BLAS the same entry points throw.
#include <stdexcept>

#include "tensor/gemm.h"

#ifdef RINGGRAD_HAVE_BLAS
#include "tensor/openblas.h"
#endif

namespace ringgrad::kernels {

#ifdef RINGGRAD_HAVE_BLAS

bool has_blas() { return openblas() != nullptr; }
const char* blas_core_name() { return has_blas() ? openblas()->get_corename() : "none"; }

namespace {
CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }
// BLAS takes 32-bit sizes; tensors here stay far below 2^31 elements per matrix dimension.
blasint i32(std::int64_t v) { return static_cast<blasint>(v); }

const OpenBlas& blas() {
  if (!has_blas()) throw std::logic_error("gemm_blas: OpenBLAS could not be loaded");
  return *openblas();
}
}  // namespace

template <>
void gemm_blas(const GemmArgs<float>& g) {
  blas().sgemm(CblasRowMajor, op(g.trans_a), op(g.trans_b), i32(g.m), i32(g.n), i32(g.k), g.alpha, g.a,
               i32(g.lda), g.b, i32(g.ldb), g.beta, g.c, i32(g.ldc));
}

template <>
void gemm_blas(const GemmArgs<double>& g) {
  blas().dgemm(CblasRowMajor, op(g.trans_a), op(g.trans_b), i32(g.m), i32(g.n), i32(g.k), g.alpha, g.a,
               i32(g.lda), g.b, i32(g.ldb), g.beta, g.c, i32(g.ldc));
}

#else

bool has_blas() { return false; }
const char* blas_core_name() { return "none"; }

template <typename T>
void gemm_blas(const GemmArgs<T>&) {
  throw std::logic_error("gemm_blas: ringgrad was built without a CPU BLAS");
}
template void gemm_blas(const GemmArgs<float>&);
template void gemm_blas(const GemmArgs<double>&);

#endif

}  // namespace ringgrad::kernels
