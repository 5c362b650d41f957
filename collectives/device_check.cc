// Device-memory checks through cudaPointerGetAttributes; without CUDA, device buffers are refused.
#include "collectives/device_check.h"

#include <fmt/format.h>

#include "collectives/buffer.h"

#if RINGGRAD_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ringgrad::collectives {

std::string memory_name(int device) { return device == kHost ? "host memory" : fmt::format("cuda:{}", device); }

#if RINGGRAD_HAVE_CUDA

std::string check_memory(const char* name, const void* data, std::size_t count, int device) {
  if (device == kHost) return {};
  if (device < 0) return fmt::format("{} buffer has device {}: expected a CUDA ordinal or kHost (-1)", name, device);
  if (count == 0) return {};
  cudaPointerAttributes attr{};
  if (const cudaError_t e = cudaPointerGetAttributes(&attr, data); e != cudaSuccess) {
    cudaGetLastError();  // clear it, so the next CUDA call does not report it again
    return fmt::format("{} buffer says cuda:{} but the CUDA runtime cannot tell what {} is: {}", name, device, data,
                       cudaGetErrorString(e));
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    return fmt::format("{} buffer says cuda:{} but {} is host memory: pass device memory, or kHost", name, device, data);
  if (attr.device != device)
    return fmt::format("{} buffer says cuda:{} but its memory is on cuda:{}", name, device, attr.device);
  return {};
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

#else

std::string check_memory(const char* name, const void*, std::size_t, int device) {
  if (device == kHost) return {};
  return fmt::format("{} buffer is on cuda:{} but ringgrad was built without CUDA (RINGGRAD_CUDA=OFF or no nvcc)",
                     name, device);
}

int cuda_device_count() { return 0; }

#endif

}  // namespace ringgrad::collectives
