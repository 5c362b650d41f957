// Buffer: a dtype-tagged view of caller memory handed to a collective (pointer, element count,
// dtype, stride, and where it lives: host memory or a CUDA device). Collectives need contiguous
// memory: a stride other than 1 is rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "collectives/dtype.h"
#include "collectives/reduce/half.h"

namespace ringgrad::collectives {

/// Buffer::device of host memory.
inline constexpr int kHost = -1;

/// `count` elements of `dtype` at `data`, `stride` elements apart (must be 1 to communicate),
/// in host memory (device kHost) or in the memory of CUDA device `device` (an ordinal).
struct Buffer {
  void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::kFloat32;
  std::ptrdiff_t stride = 1;
  int device = kHost;
};

/// Read-only counterpart of Buffer; a Buffer converts to it, as span<T> to span<const T>.
struct ConstBuffer {
  const void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::kFloat32;
  std::ptrdiff_t stride = 1;
  int device = kHost;

  ConstBuffer() = default;
  ConstBuffer(const void* d, std::size_t n, DType t, std::ptrdiff_t s = 1, int dev = kHost)
      : data(d), count(n), dtype(t), stride(s), device(dev) {}
  ConstBuffer(const Buffer& b)  // NOLINT: converts implicitly, like span<T> to span<const T>
      : data(b.data), count(b.count), dtype(b.dtype), stride(b.stride), device(b.device) {}
};

/// The DType of a C++ element type: float, double, Float16, BFloat16, int32_t, int64_t, uint8_t.
template <typename T>
constexpr DType dtype_of() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<U, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<U, Float16>) return DType::kFloat16;
  else if constexpr (std::is_same_v<U, BFloat16>) return DType::kBFloat16;
  else if constexpr (std::is_same_v<U, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<U, int64_t>) return DType::kInt64;
  else {
    static_assert(std::is_same_v<U, uint8_t>, "collectives support float, double, Float16, BFloat16, int32, int64, uint8");
    return DType::kUInt8;
  }
}

/// Views of a contiguous span: buffer(std::span<float>(v)) etc.
template <typename T>
Buffer buffer(std::span<T> s) requires(!std::is_const_v<T>) {
  return Buffer{s.data(), s.size(), dtype_of<T>(), 1};
}
template <typename T>
ConstBuffer buffer(std::span<const T> s) {
  return ConstBuffer{s.data(), s.size(), dtype_of<T>(), 1};
}

}  // namespace ringgrad::collectives
