// Storage: one reference-counted block of memory that any number of tensor views share.
#pragma once

#include <cstddef>
#include <memory>

#include "tensor/device.h"

namespace ringgrad {

/// A buffer of `nbytes` bytes on `device`: 64-byte aligned on the CPU; on either device from a
/// caching allocator that keeps freed blocks for the next request of their size, so a process
/// holds on to its peak (on the CPU at most twice its peak; storage.cc, block_cache.h).
/// Zero-initialised unless `zeroed` is false (for outputs a kernel overwrites entirely:
/// clearing them first costs a pass over memory). Shared through std::shared_ptr: it lives as
/// long as the last tensor that views it. Throws std::bad_alloc when the host is out of memory,
/// std::runtime_error for a GPU when ringgrad has no CUDA or the GPU is out of memory.
/// Bytes of host memory the cache behind CPU storage holds: handed out to tensors now (each
/// request rounded up as BlockCache::round does), the most handed out at once since the process
/// started or the last reset_peak_host_memory_stats(), and kept in free blocks (at most the most
/// ever in use at once).
struct HostMemoryStats {
  std::size_t in_use = 0, peak_in_use = 0, cached = 0;
};
HostMemoryStats host_memory_stats();
/// Starts peak_in_use again from in_use (torch.cuda.reset_peak_memory_stats), so the peak of one
/// stretch of work can be read: the live tensors of a training step. The cache's own limit keeps
/// counting from the start.
void reset_peak_host_memory_stats();

class Storage {
 public:
  explicit Storage(std::size_t nbytes, bool zeroed = true, Device device = kCPU);

  /// Host pointer on the CPU, device pointer on a GPU.
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return data_.get_deleter().device; }

  /// Reallocates to `nbytes`, keeping the first min(old, new) bytes and zeroing the rest;
  /// 0 frees the memory. Tensors viewing this storage stay attached to it, as with PyTorch's
  /// untyped_storage().resize_(): sharded data parallelism frees a parameter's memory
  /// between uses and refills it in place. A view must not be read while it lies past nbytes.
  void resize(std::size_t nbytes);

  /// Moves the bytes to `device` in place: every tensor viewing this storage (tied weights,
  /// optimizer references) follows, as Module::to needs.
  void move_to(Device device);

 private:
  struct Free {
    Device device;
    std::size_t nbytes;
    void operator()(std::byte* p) const;
  };
  using Memory = std::unique_ptr<std::byte[], Free>;
  static Memory allocate(std::size_t nbytes, bool zeroed, Device device);

  Memory data_;
  std::size_t nbytes_;
};

}  // namespace ringgrad
