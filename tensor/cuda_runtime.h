// The few CUDA runtime services the tensor library needs, callable from plain C++ (no CUDA
// headers): device discovery, the caching allocator, copies, and the one stream per process on
// which every tensor kernel runs. Without CUDA support, device_count() is 0 and the rest throw.
#pragma once

#include <cstddef>
#include <string>

namespace ringgrad::cuda {

/// Number of visible GPUs: 0 when ringgrad was built without CUDA, or there is no driver or GPU.
int device_count();
/// Why device_count() is 0, for skip messages ("built without CUDA", the driver's error, ...).
std::string unavailable_reason();

/// `nbytes` of device memory on GPU `device` from the caching allocator (cuda_allocator.cc),
/// zeroed when `zeroed`. Throws std::runtime_error naming the size when the GPU is out of memory.
void* allocate(std::size_t nbytes, int device, bool zeroed);
/// Returns a block from allocate() to the cache.
void deallocate(void* ptr, std::size_t nbytes, int device);

/// Copies `nbytes` between any two of host and device memory, in the order of GPU `device`'s
/// tensor stream; returns when the data is at `dst`.
void copy(void* dst, const void* src, std::size_t nbytes, int device);
/// Waits until every kernel queued on GPU `device`'s tensor stream has finished.
void synchronize(int device);

/// Bytes the caching allocator holds on `device`: handed out now, high-water mark of that, and
/// reserved from cudaMalloc (handed out + cached).
struct MemoryStats {
  std::size_t allocated = 0, peak_allocated = 0, reserved = 0;
};
MemoryStats memory_stats(int device);

}  // namespace ringgrad::cuda
