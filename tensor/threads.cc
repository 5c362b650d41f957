// set_num_threads: hands the thread count to OpenBLAS, the one multi-threaded piece, and keeps it
// for gemm()'s choice of library; at one thread it loads oneDNN (tensor/onednn.h) right away.
#include "tensor/threads.h"

#include <atomic>
#include <stdexcept>

#include "tensor/onednn.h"

#ifdef RINGGRAD_HAVE_BLAS
#include "tensor/openblas.h"
#endif

namespace ringgrad {
namespace {
std::atomic<int> thread_count{0};  // 0: never set
}  // namespace

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: need at least 1 thread");
#ifdef RINGGRAD_HAVE_BLAS
  if (const auto* blas = kernels::openblas()) blas->set_num_threads(n);
#endif
  thread_count = n;
  // Its load sets OMP_NUM_THREADS for a moment: now, while the program is likely one thread.
  if (n == 1) kernels::onednn_sgemm();
}

int num_threads() { return thread_count; }

}  // namespace ringgrad
