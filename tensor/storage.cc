// Storage's memory: 64-byte aligned host blocks from a heap told to keep freed memory (why, and
// the price, below), device blocks from the CUDA caching allocator, and copies between them.
#include "tensor/storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "tensor/cuda_runtime.h"

namespace ringgrad {

// 64 bytes: a cache line, and enough for any SIMD load the compiler or BLAS may use.
constexpr std::size_t kAlignment = 64;

// A training step frees its activations and allocates the same sizes again in the next step.
// By default glibc gives every block over its mmap threshold (128 KiB at first, adapting up to
// 32 MiB) back to the kernel on free, and trims free memory at the top of the heap, so each step
// faults its pages in again and the kernel zeroes every one: about 1,000 faults per baby-GPT step,
// 1.3 ms of system time in a 40 ms step on the 2-core VM of docs/distributed.md. Fixing both
// thresholds (which also stops glibc adapting them) keeps freed blocks in the heap for the next
// step, as the caching allocator does for GPUs. DDP on 2 ranks, whose every step waits for the
// slower rank's faults, ran 9% faster. The price: memory a program frees stays with the process
// (a training loop's peak is reached every step anyway). Blocks over 32 MiB are still returned.
// Settings of one's own (GLIBC_TUNABLES=glibc.malloc....) are left alone.
static void keep_freed_memory() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // the largest glibc accepts on 64-bit machines
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
  });
#endif
}

Storage::Memory Storage::allocate(std::size_t nbytes, bool zeroed, Device device) {
  if (device.is_cuda()) {
    return Memory(static_cast<std::byte*>(cuda::allocate(nbytes, device.index, zeroed)), Free{device, nbytes});
  }
  keep_freed_memory();
  const std::size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (zeroed) std::memset(p, 0, rounded);
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
    std::free(p);
  }
}

}  // namespace ringgrad
