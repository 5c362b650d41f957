// visit_dtype: calls a generic lambda with the C++ storage type of a DType, so a loop is
// written once for all seven dtypes; Compute<T> is the type arithmetic happens in.
#pragma once

#include <cstdint>
#include <type_traits>

#include "collectives/dtype.h"
#include "collectives/reduce/half.h"

namespace ringgrad::collectives {

/// Arithmetic type and conversions for a storage type: float for the 16-bit floats.
template <typename T>
struct Compute {
  using type = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
template <>
struct Compute<Float16> {
  using type = float;
  static float load(Float16 v) { return to_float(v); }
  static Float16 store(float v) { return to_float16(v); }
};
template <>
struct Compute<BFloat16> {
  using type = float;
  static float load(BFloat16 v) { return to_float(v); }
  static BFloat16 store(float v) { return to_bfloat16(v); }
};

/// Calls f(std::type_identity<T>{}) with T the storage type of `dtype`.
template <typename F>
decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(std::type_identity<float>{});
    case DType::kFloat64: return f(std::type_identity<double>{});
    case DType::kFloat16: return f(std::type_identity<Float16>{});
    case DType::kBFloat16: return f(std::type_identity<BFloat16>{});
    case DType::kInt32: return f(std::type_identity<int32_t>{});
    case DType::kInt64: return f(std::type_identity<int64_t>{});
    case DType::kUInt8: return f(std::type_identity<uint8_t>{});
  }
  return f(std::type_identity<uint8_t>{});  // unreachable for valid enum values
}

}  // namespace ringgrad::collectives
