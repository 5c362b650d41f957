// exp for a softmax, free of calls so its loops vectorise: Cephes' expf (x = n ln2 + r,
// |r| <= ln2/2, a degree-5 polynomial for e^r, 2^n written into the exponent bits), within 2
// ulp. For arguments x - max <= 0: below -87 the result underflows to about 1e-38 as it should;
// large positive arguments are not handled. F is float, or a GCC vector of floats with I its
// vector of int32 (the tile kernels' 8 lanes, tensor/attention_tiles.cc).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace ringgrad::kernels {

template <typename F, typename I = std::int32_t>
[[gnu::always_inline]] inline F exp_poly(const F& argument) {
  const F lowest = F{} - 87.0f;
  const F x = argument < lowest ? lowest : argument;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const F n = (x * 1.44269504088896341f + kRound) - kRound;
  const F r = x - n * 0.693359375f + n * 2.12194440e-4f;  // ln2 split in two for accuracy
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  I exponent;
  if constexpr (std::is_same_v<F, float>) {
    exponent = static_cast<std::int32_t>(n);
  } else {
    exponent = __builtin_convertvector(n, I);
  }
  const F two_n = std::bit_cast<F>((exponent + 127) << 23);
  return (p * r * r + r + 1.0f) * two_n;
}

}  // namespace ringgrad::kernels
