// Storage's memory: 64-byte aligned host blocks and device blocks, each from a caching
// allocator (why, and the price, below), and copies between them.
#include "tensor/storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "tensor/block_cache.h"
#include "tensor/cuda_runtime.h"

namespace ringgrad {

// 64 bytes: a cache line, and enough for any SIMD load the compiler or BLAS may use.
constexpr std::size_t kAlignment = 64;

// Host memory: a block cache (block_cache.h) in front of aligned_alloc, as the GPU has one in
// front of cudaMalloc. A training step frees its activations and allocates the same sizes in
// the next step. glibc at its defaults returned every block over its mmap threshold to the
// kernel and faulted it in again, about 1,000 page faults a baby-GPT step (docs/distributed.md);
// told to keep them, it still searched its bins on every call. From the cache a request takes
// the block of its size freed last, mapped and likely still in cache. A block is only reused
// for its own size, so work whose shapes keep changing (sampling, context growing by one token
// a step) would fill the cache with sizes never asked for again: the cache keeps at most as
// many bytes as were ever in use at once, and frees what would go past that. The price: a
// process holds on to up to twice its peak.
namespace {

struct HostHeap {
  std::mutex mutex;
  BlockCache blocks;
  std::size_t in_use = 0, peak_in_use = 0;  // bytes handed out now, and the most at once since a reset
  std::size_t high_water = 0;                // the most at once ever: what the cache may keep
};

// Never destroyed: tensors freed during static destruction still return their blocks here.
HostHeap& host_heap() {
  static auto* heap = new HostHeap();
  return *heap;
}

void* host_allocate(std::size_t size) {
  HostHeap& heap = host_heap();
  std::lock_guard lock(heap.mutex);
  void* block = heap.blocks.take(size);
  if (block == nullptr) block = std::aligned_alloc(kAlignment, size);
  if (block == nullptr) throw std::bad_alloc();
  heap.in_use += size;
  heap.peak_in_use = std::max(heap.peak_in_use, heap.in_use);
  heap.high_water = std::max(heap.high_water, heap.in_use);
  return block;
}

void host_deallocate(void* block, std::size_t size) {
  HostHeap& heap = host_heap();
  std::lock_guard lock(heap.mutex);
  heap.in_use -= size;
  if (heap.blocks.cached() + size <= heap.high_water) {
    heap.blocks.give(block, size);
  } else {
    std::free(block);
  }
}

}  // namespace

HostMemoryStats host_memory_stats() {
  HostHeap& heap = host_heap();
  std::lock_guard lock(heap.mutex);
  return {heap.in_use, heap.peak_in_use, heap.blocks.cached()};
}

void reset_peak_host_memory_stats() {
  HostHeap& heap = host_heap();
  std::lock_guard lock(heap.mutex);
  heap.peak_in_use = heap.in_use;
}

Storage::Memory Storage::allocate(std::size_t nbytes, bool zeroed, Device device) {
  if (device.is_cuda()) {
    return Memory(static_cast<std::byte*>(cuda::allocate(nbytes, device.index, zeroed)), Free{device, nbytes});
  }
  void* p = host_allocate(BlockCache::round(nbytes));  // a multiple of kAlignment
  if (zeroed) std::memset(p, 0, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
  return Memory(static_cast<std::byte*>(p), Free{device, nbytes});
}

Storage::Storage(std::size_t nbytes, bool zeroed, Device device)
    : data_(allocate(nbytes, zeroed, device)), nbytes_(nbytes) {}

// Copies between any two of CPU and GPU memory.
static void copy_bytes(std::byte* dst, Device dst_device, const std::byte* src, Device src_device, std::size_t n) {
  if (n == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, n);
  } else {
    cuda::copy(dst, src, n, (dst_device.is_cuda() ? dst_device : src_device).index);
  }
}

void Storage::resize(std::size_t nbytes) {
  if (nbytes == nbytes_) return;
  Memory fresh = allocate(nbytes, true, device());
  copy_bytes(fresh.get(), device(), data_.get(), device(), std::min(nbytes, nbytes_));
  data_ = std::move(fresh);
  nbytes_ = nbytes;
}

void Storage::move_to(Device target) {
  if (target == device()) return;
  Memory fresh = allocate(nbytes_, false, target);
  copy_bytes(fresh.get(), target, data_.get(), device(), nbytes_);
  data_ = std::move(fresh);
}

void Storage::Free::operator()(std::byte* p) const {
  if (device.is_cuda()) {
    cuda::deallocate(p, nbytes, device.index);
  } else {
    host_deallocate(p, BlockCache::round(nbytes));
  }
}

}  // namespace ringgrad
