// The CUDA runtime services of cuda_runtime.h (device discovery, copies, streams). The caching
// allocator is in cuda_allocator.cc.
#include "tensor/cuda_runtime.h"

#include <fmt/format.h>

#include <array>
#include <mutex>
#include <stdexcept>

#include "tensor/cuda_common.h"

namespace ringgrad::cuda {

void check(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw std::runtime_error(fmt::format("{}: {} ({}:{})", what, cudaGetErrorString(err), file, line));
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error so later calls report their own
    return 0;
  }
  return n;
}

std::string unavailable_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable GPU: ") + cudaGetErrorString(err);
  }
  return n == 0 ? "no GPU visible" : "";
}

cudaStream_t stream(int device) {
  constexpr int kMaxDevices = 64;
  static std::array<cudaStream_t, kMaxDevices> streams{};
  static std::mutex mutex;
  if (device < 0 || device >= kMaxDevices) throw std::invalid_argument(fmt::format("cuda: bad device {}", device));
  std::lock_guard lock(mutex);
  if (streams[device] == nullptr) {
    DeviceGuard guard(device);
    // Non-blocking: the legacy default stream, which other libraries may use, does not order it.
    RINGGRAD_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking));
  }
  return streams[device];
}

DeviceGuard::DeviceGuard(int device) {
  RINGGRAD_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) RINGGRAD_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { cudaSetDevice(previous_); }

void copy(void* dst, const void* src, std::size_t nbytes, int device) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  // cudaMemcpyDefault: unified virtual addressing tells host from device pointers.
  RINGGRAD_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream(device)));
  RINGGRAD_CUDA_CHECK(cudaStreamSynchronize(stream(device)));
}

void synchronize(int device) {
  DeviceGuard guard(device);
  RINGGRAD_CUDA_CHECK(cudaStreamSynchronize(stream(device)));
}

}  // namespace ringgrad::cuda
