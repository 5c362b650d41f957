// Caching allocator for tensor memory on GPUs. cudaMalloc and cudaFree are slow (cudaFree waits
// for the whole device), and a training step allocates the same sizes every iteration, so freed
// blocks stay in a block cache (block_cache.h) for the next request of their size. Reuse needs
// no events because all tensor kernels of a device run on one stream (cuda_common.h). Memory is
// plain cudaMalloc, never managed memory.
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "tensor/block_cache.h"
#include "tensor/cuda_common.h"
#include "tensor/cuda_runtime.h"

namespace ringgrad::cuda {
namespace {

struct DevicePool {
  BlockCache blocks;
  MemoryStats stats;
};

class CachingAllocator {
 public:
  void* allocate(std::size_t nbytes, int device) {
    const std::size_t size = BlockCache::round(nbytes);
    std::lock_guard lock(mutex_);
    DevicePool& pool = pools_[device];
    void* ptr = pool.blocks.take(size);
    if (ptr == nullptr) {
      DeviceGuard guard(device);
      if (cudaMalloc(&ptr, size) != cudaSuccess) {
        cudaGetLastError();
        release_cached(pool);  // the cache may hold what this request needs, in other sizes
        if (cudaMalloc(&ptr, size) != cudaSuccess) {
          cudaGetLastError();
          throw std::runtime_error(fmt::format(
              "cuda:{}: out of memory allocating {} bytes ({} allocated by tensors, {} reserved)",
              device, size, pool.stats.allocated, pool.stats.reserved));
        }
      }
      pool.stats.reserved += size;
    }
    pool.stats.allocated += size;
    pool.stats.peak_allocated = std::max(pool.stats.peak_allocated, pool.stats.allocated);
    return ptr;
  }

  void deallocate(void* ptr, std::size_t nbytes, int device) {
    const std::size_t size = BlockCache::round(nbytes);
    std::lock_guard lock(mutex_);
    DevicePool& pool = pools_[device];
    pool.blocks.give(ptr, size);
    pool.stats.allocated -= size;
  }

  MemoryStats stats(int device) {
    std::lock_guard lock(mutex_);
    return pools_[device].stats;
  }

 private:
  static void release_cached(DevicePool& pool) {
    pool.stats.reserved -= pool.blocks.cached();
    pool.blocks.release_all([](void* block, std::size_t) { cudaFree(block); });
  }

  std::mutex mutex_;
  std::map<int, DevicePool> pools_;
};

// Never destroyed: tensors freed during static destruction still return their blocks here, and
// the driver reclaims everything at exit.
CachingAllocator& allocator() {
  static auto* instance = new CachingAllocator();
  return *instance;
}

}  // namespace

void* allocate(std::size_t nbytes, int device, bool zeroed) {
  // The one check every route to GPU memory passes (Tensor::zeros, Tensor::to, Module::to).
  // A GPU that is not there is reported as such, not as whatever the first CUDA call fails with.
  static const int visible = device_count();
  if (device < 0 || device >= visible) {
    throw std::runtime_error(fmt::format("cannot place memory on cuda:{}: {}", device,
                                         visible == 0 ? unavailable_reason()
                                                      : fmt::format("only {} GPU(s) visible", visible)));
  }
  void* ptr = allocator().allocate(nbytes, device);
  if (zeroed && nbytes > 0) {
    DeviceGuard guard(device);
    RINGGRAD_CUDA_CHECK(cudaMemsetAsync(ptr, 0, nbytes, stream(device)));
  }
  return ptr;
}

void deallocate(void* ptr, std::size_t nbytes, int device) { allocator().deallocate(ptr, nbytes, device); }

MemoryStats memory_stats(int device) { return allocator().stats(device); }

}  // namespace ringgrad::cuda
