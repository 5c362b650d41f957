// A Channel operation over a caller's buffer, for the tests that drive a Channel directly on a
// socket pair (no Transport around it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/channel.h"

namespace ringgrad::test {

inline transport::detail::Op channel_op(transport::detail::Direction dir, std::vector<std::byte>& data, uint64_t tag) {
  transport::detail::Op op;
  op.dir = dir;
  op.data = data.data();
  op.size = data.size();
  op.tag = tag;
  return op;
}

}  // namespace ringgrad::test
