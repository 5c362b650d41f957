// CarryOver: bytes read from the socket past the end of a message, the start of the next one;
// they are read before the socket. A receive reads its header and payload in one recvmsg, and a
// receive of at most N bytes reads N: when the message was shorter than that, or belonged to
// another stream and was shorter than the buffer it was read into, what lies past its end is
// kept here. In a job with one stream and exact-size receives it stays empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <sys/uio.h>

namespace ringgrad::transport::detail {

class CarryOver {
 public:
  bool empty() const { return pos_ == bytes_.size(); }
  /// Puts n bytes back in front of what is kept: they were read before it.
  void put_back(const std::byte* bytes, uint64_t n);
  /// Fills iov[0..count) in order from the kept bytes, as a recvmsg would from the socket;
  /// returns the bytes moved.
  uint64_t read(const iovec* iov, int count);

 private:
  std::vector<std::byte> bytes_;
  std::size_t pos_ = 0;  // bytes_[pos_..] are still to be read
};

}  // namespace ringgrad::transport::detail
