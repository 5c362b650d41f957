// set_num_threads: hands the thread count to OpenBLAS, the one multi-threaded piece, and keeps it
// for gemm()'s choice of library (tensor/onednn.h).
#include "tensor/threads.h"

#include <atomic>
#include <stdexcept>

#ifdef RINGGRAD_HAVE_BLAS
#include "tensor/openblas.h"
#endif

namespace ringgrad {
namespace {
std::atomic<int> count{0};
}  // namespace

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: need at least 1 thread");
#ifdef RINGGRAD_HAVE_BLAS
  if (const auto* blas = kernels::openblas()) blas->set_num_threads(n);
#endif
  count = n;
}

int num_threads() { return count; }

}  // namespace ringgrad
