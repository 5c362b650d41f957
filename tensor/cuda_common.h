// What every CUDA source of the tensor library shares: error checking, the per-process tensor
// stream, a guard that selects a GPU, and the launch shape of a grid-stride loop.
// Included only by .cu files and CUDA-only .cc files (it needs the CUDA headers).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace ringgrad::cuda {

/// Throws std::runtime_error "what: CUDA error text (file:line)" unless `err` is cudaSuccess.
void check(cudaError_t err, const char* what, const char* file, int line);
#define RINGGRAD_CUDA_CHECK(expr) ::ringgrad::cuda::check((expr), #expr, __FILE__, __LINE__)

/// The stream every tensor kernel on GPU `device` runs on, created on first use and kept for the
/// life of the process. One stream means kernels run in the order they are issued, so a block
/// the caching allocator hands out again can only be touched by later work.
cudaStream_t stream(int device);

/// Makes `device` the current GPU for the guard's lifetime (kernel launches go to it).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

/// Threads per block of the element-wise kernels.
constexpr int kThreads = 256;
/// Blocks for a grid-stride loop over n elements: enough to fill the GPU, never more than needed.
inline unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 65535));
}

}  // namespace ringgrad::cuda
