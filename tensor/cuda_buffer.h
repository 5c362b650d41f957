// Scratch memory on a GPU for the intermediates of one kernel call (cuBLAS's workspace, bf16
// copies of GEMM operands, attention's heads layout): n elements of T from the caching
// allocator, returned when the array goes out of scope. Returning it while kernels that use it
// are still queued is safe: every tensor kernel runs on the one tensor stream, so whatever is
// handed the memory next runs after them (cuda_common.h). Plain C++ (no CUDA headers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "tensor/cuda_runtime.h"

namespace ringgrad::cuda {

template <typename T>
class DeviceArray {
 public:
  /// n elements (uninitialised) on GPU `device`. Throws std::runtime_error when it is out of memory.
  DeviceArray(std::int64_t n, int device)
      : nbytes_(static_cast<std::size_t>(n) * sizeof(T)),
        device_(device),
        data_(static_cast<T*>(allocate(nbytes_, device, false))) {}
  ~DeviceArray() {
    if (data_ != nullptr) deallocate(data_, nbytes_, device_);
  }
  DeviceArray(DeviceArray&& other) noexcept
      : nbytes_(other.nbytes_), device_(other.device_), data_(std::exchange(other.data_, nullptr)) {}
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray& operator=(DeviceArray&&) = delete;

  T* data() const { return data_; }

 private:
  std::size_t nbytes_;
  int device_;
  T* data_;
};

}  // namespace ringgrad::cuda
