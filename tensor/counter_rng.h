// The draw behind Generator, as functions a CPU loop and a CUDA kernel both call: the i-th
// value of a stream is SplitMix64 (Steele et al. 2014) of (seed, i), so any element can be
// drawn on its own, in any order, on any device, and the results are bit-identical.
#pragma once

#include <cstdint>

#include "tensor/host_device.h"

namespace ringgrad {

/// 64 random bits: draw number `counter` (1, 2, ...) of the stream seeded with `seed`.
RINGGRAD_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * counter;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) with 53 bits of precision: the top 53 bits of draw `counter`.
RINGGRAD_HOST_DEVICE inline double uniform_double(std::uint64_t seed, std::uint64_t counter) {
  return static_cast<double>(splitmix64(seed, counter) >> 11) * 0x1.0p-53;
}

}  // namespace ringgrad
