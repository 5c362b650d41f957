// One element of a reduction, a op b, written once for the CPU loop (reduce_kernel.cc) and the
// CUDA kernel (reduce_kernel.cu). AVG adds here; the division by the world size comes last.
// Integers wrap (computed unsigned) instead of overflowing into undefined behaviour.
#pragma once

#include <cstdint>
#include <type_traits>

#include "collectives/dtype.h"

#if defined(__CUDACC__)
#define RINGGRAD_REDUCE_HOST_DEVICE __host__ __device__
#else
#define RINGGRAD_REDUCE_HOST_DEVICE
#endif

namespace ringgrad::collectives {

/// a op b for one element of compute type C (float for the 16-bit float types).
template <ReduceOp Op, typename C>
RINGGRAD_REDUCE_HOST_DEVICE inline C apply_op(C a, C b) {
  if constexpr (Op == ReduceOp::SUM || Op == ReduceOp::AVG) {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  } else if constexpr (Op == ReduceOp::PRODUCT) {
    if constexpr (std::is_integral_v<C>) {
      // uint32 arithmetic for the small types so uint8*uint8 cannot overflow int.
      using U = std::conditional_t<(sizeof(C) < 4), uint32_t, std::make_unsigned_t<C>>;
      return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  } else if constexpr (Op == ReduceOp::MIN) {
    return b < a ? b : a;
  } else {
    return a < b ? b : a;
  }
}

}  // namespace ringgrad::collectives
