// The message bytes the transport tests send: they depend on a seed (the sender, the message)
// and the position, so that a byte from another message, a shifted byte or a dropped one all
// show up on arrival.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringgrad::test {

inline std::vector<std::byte> pattern(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> bytes(size);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& b : bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
    b = static_cast<std::byte>(x);
  }
  return bytes;
}

}  // namespace ringgrad::test
