#include "tensor/storage.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ringgrad {

// 64 bytes: a cache line, and enough for any SIMD load the compiler or BLAS may use.
constexpr std::size_t kAlignment = 64;

Storage::Storage(std::size_t nbytes) : nbytes_(nbytes) {
  const std::size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  data_.reset(static_cast<std::byte*>(p));
}

void Storage::Free::operator()(std::byte* p) const { std::free(p); }

}  // namespace ringgrad
