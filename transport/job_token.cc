// Drawing and comparing job tokens.

#include "transport/job_token.h"

#include <algorithm>
#include <cstdint>
#include <random>

#include <fmt/format.h>

namespace ringgrad::transport {

std::string new_job_token() {
  std::random_device source;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", static_cast<uint32_t>(source()));
  return token;
}

bool same_job_token(std::string_view a, std::string_view b) {
  // Every byte position of the longer token is compared, whatever the bytes: the loop never
  // ends early. A length difference counts as a difference too.
  unsigned difference = a.size() == b.size() ? 0u : 1u;
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    difference |= static_cast<unsigned>(x ^ y);
  }
  return difference == 0;
}

}  // namespace ringgrad::transport
