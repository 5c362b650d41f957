// CarryOver: a byte vector and a read position; put_back copies what is still unread behind the
// new bytes.

#include "transport/carry_over.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ringgrad::transport::detail {

void CarryOver::put_back(const std::byte* bytes, uint64_t n) {
  std::vector<std::byte> rest(bytes, bytes + n);
  rest.insert(rest.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(pos_), bytes_.end());
  bytes_ = std::move(rest);
  pos_ = 0;
}

uint64_t CarryOver::read(const iovec* iov, int count) {
  uint64_t moved = 0;
  for (int i = 0; i < count && pos_ < bytes_.size(); ++i) {
    const std::size_t n = std::min(iov[i].iov_len, bytes_.size() - pos_);
    std::memcpy(iov[i].iov_base, bytes_.data() + pos_, n);
    pos_ += n;
    moved += n;
  }
  if (pos_ == bytes_.size()) {
    bytes_.clear();
    pos_ = 0;
  }
  return moved;
}

}  // namespace ringgrad::transport::detail
