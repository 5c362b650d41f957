// float16 (IEEE binary16) and bfloat16 storage types and their conversions to and from
// float32, round-to-nearest-even; collectives reduce them in float32 (F. Giesen's bit tricks).
#pragma once

#include <bit>
#include <cstdint>

namespace ringgrad::collectives {

/// IEEE 754 binary16, stored as its bit pattern.
struct Float16 {
  uint16_t bits;
};
/// bfloat16: the upper 16 bits of a float32.
struct BFloat16 {
  uint16_t bits;
};

inline float to_float(Float16 h) {
  constexpr uint32_t kShiftedExp = 0x7c00u << 13;
  uint32_t u = static_cast<uint32_t>(h.bits & 0x7fff) << 13;
  const uint32_t exp = u & kShiftedExp;
  u += (127 - 15) << 23;
  if (exp == kShiftedExp) {  // Inf or NaN
    u += (128 - 16) << 23;
  } else if (exp == 0) {  // zero or subnormal: renormalize through a float subtraction
    u += 1 << 23;
    u = std::bit_cast<uint32_t>(std::bit_cast<float>(u) - std::bit_cast<float>(113u << 23));
  }
  return std::bit_cast<float>(u | (static_cast<uint32_t>(h.bits & 0x8000) << 16));
}

inline Float16 to_float16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t out;
  if (u >= (127u + 16) << 23) {  // too large for half, Inf or NaN
    out = u > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (u < (113u << 23)) {  // half subnormal or zero: let float addition round
    constexpr uint32_t kMagic = 126u << 23;
    u = std::bit_cast<uint32_t>(std::bit_cast<float>(u) + std::bit_cast<float>(kMagic));
    out = static_cast<uint16_t>(u - kMagic);
  } else {  // normal: rebias the exponent and round to nearest even
    const uint32_t mant_odd = (u >> 13) & 1;
    u += ((15u - 127u) << 23) + 0xfff + mant_odd;
    out = static_cast<uint16_t>(u >> 13);
  }
  return Float16{static_cast<uint16_t>(out | (sign >> 16))};
}

inline float to_float(BFloat16 b) { return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16); }

inline BFloat16 to_bfloat16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40)};
  return BFloat16{static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16)};
}

}  // namespace ringgrad::collectives
