#include "tensor/storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace ringgrad {

// 64 bytes: a cache line, and enough for any SIMD load the compiler or BLAS may use.
constexpr std::size_t kAlignment = 64;

namespace {
std::byte* allocate(std::size_t nbytes, bool zeroed) {
  const std::size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (zeroed) std::memset(p, 0, rounded);
  return static_cast<std::byte*>(p);
}
}  // namespace

Storage::Storage(std::size_t nbytes, bool zeroed) : data_(allocate(nbytes, zeroed)), nbytes_(nbytes) {}

void Storage::resize(std::size_t nbytes) {
  if (nbytes == nbytes_) return;
  std::unique_ptr<std::byte[], Free> fresh(allocate(nbytes, true));
  std::memcpy(fresh.get(), data_.get(), std::min(nbytes, nbytes_));
  data_ = std::move(fresh);
  nbytes_ = nbytes;
}

void Storage::Free::operator()(std::byte* p) const { std::free(p); }

}  // namespace ringgrad
