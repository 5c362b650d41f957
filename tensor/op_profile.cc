// The op profiler's clock: per-kind totals of wall time, with the GPUs synchronised at every
// scope boundary while profiling is on, so a kernel's time lands on the kind that queued it.
#include "tensor/op_profile.h"

#include "tensor/cuda_runtime.h"

namespace ringgrad::profile {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Matmul: return "matmul";
    case OpKind::Attention: return "attention";
    case OpKind::LayerNorm: return "layer_norm";
    case OpKind::Optimizer: return "optimizer";
  }
  return "?";
}

namespace detail {

// Synchronising rather than timing each kind with CUDA events: simple, and correct for any mix
// of kernels and host work in a scope. It removes the overlap of host and GPU, so a profiled
// step is slower than an unprofiled one; the breakdown, not the total, is what it is for.
std::chrono::steady_clock::time_point synchronized_now() {
  static const int gpus = cuda::device_count();
  for (int d = 0; d < gpus; ++d) {
    if (cuda::memory_stats(d).reserved > 0) cuda::synchronize(d);
  }
  return std::chrono::steady_clock::now();
}

}  // namespace detail

}  // namespace ringgrad::profile
