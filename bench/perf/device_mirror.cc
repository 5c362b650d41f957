// Device twins of the perf tools' buffers through cudaMemcpy; refused in builds without CUDA.
#include "bench/perf/device_mirror.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "collectives/buffer.h"
#include "collectives/device_check.h"
#if RINGGRAD_HAVE_CUDA
#include "transport/cuda_ipc.h"
#endif

namespace ringgrad::bench {

int pick_device(int rank) {
  const int n = collectives::cuda_device_count();
  if (n == 0)
    throw std::runtime_error(RINGGRAD_HAVE_CUDA ? "--device cuda: no GPU visible to this process"
                                                : "--device cuda: ringgrad was built without CUDA");
  const char* local = std::getenv("LOCAL_RANK");
  return (local != nullptr && *local != '\0' ? std::atoi(local) : rank) % n;
}

#if RINGGRAD_HAVE_CUDA

struct DeviceMirror::Memory {
  transport::DeviceMemory memory;
};

DeviceMirror::DeviceMirror(std::vector<std::byte>& host, int device) : host_(host), data_(host.data()) {
  if (device == collectives::kHost) return;
  transport::cuda_check(cudaSetDevice(device), "cudaSetDevice");
  memory_ = std::make_unique<Memory>(Memory{transport::DeviceMemory(std::max<std::size_t>(host.size(), 1))});
  data_ = memory_->memory.get();
  if (!host.empty())
    transport::cuda_check(cudaMemcpy(data_, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}

void DeviceMirror::to_host() {
  if (memory_ && !host_.empty())
    transport::cuda_check(cudaMemcpy(host_.data(), data_, host_.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}

#else

struct DeviceMirror::Memory {};

DeviceMirror::DeviceMirror(std::vector<std::byte>& host, int device) : host_(host), data_(host.data()) {
  if (device != collectives::kHost) throw std::runtime_error("--device cuda: ringgrad was built without CUDA");
}

void DeviceMirror::to_host() {}

#endif

DeviceMirror::~DeviceMirror() = default;

}  // namespace ringgrad::bench
