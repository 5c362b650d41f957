// FramedSocket::step: the loop every TCP message goes through, once per system call. A receive
// reads the header and the expected payload in one call; once the header is in, it is checked
// before anything else, so on a mismatch the buffer's contents are unspecified and the error is
// raised first.

#include "transport/framed_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "transport/channel_errors.h"
#include "transport/connection.h"
#include "transport/error.h"

namespace ringgrad::transport::detail {

Step FramedSocket::step(Op*& current, bool blocking, uint64_t budget, std::string& cause) {
  uint64_t moved = 0;
  for (;;) {
    Op& op = *current;
    iovec iov[2];
    int count = 0;
    if (op.header_done < wire::kFrameHeaderBytes)
      iov[count++] = {op.header.data() + op.header_done, wire::kFrameHeaderBytes - op.header_done};
    if (op.payload_done < op.size) iov[count++] = {op.data + op.payload_done, op.size - op.payload_done};
    if (count == 0) return Step::done;

    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    // Once the header is checked, a blocking receive may wait for the whole payload at once.
    const int flags = !blocking ? MSG_DONTWAIT : op.header_done == wire::kFrameHeaderBytes ? MSG_WAITALL : 0;
    ssize_t n = dir_ == Direction::send ? ::sendmsg(conn_.fd(), &msg, flags | MSG_NOSIGNAL)
                : !carry_.empty()       ? static_cast<ssize_t>(carry_.read(iov, count))
                                        : ::recvmsg(conn_.fd(), &msg, flags);
    if (n > 0) {
      auto got = static_cast<uint64_t>(n);
      const bool had_header = op.header_done == wire::kFrameHeaderBytes;
      const uint64_t to_header = std::min<uint64_t>(got, wire::kFrameHeaderBytes - op.header_done);
      op.header_done += to_header;
      op.payload_done += got - to_header;
      timer_.touch();
      if (dir_ == Direction::recv && !had_header && op.header_done == wire::kFrameHeaderBytes) {
        wire::FrameHeader header;
        cause = check_header(op, header);
        if (!cause.empty()) return Step::failed;
        if (header.stream != op.stream) {
          Op* target = router_.reroute(op, header, carry_, cause);
          if (target == nullptr) return Step::failed;
          current = target;
        } else if (!op.accepts(header.tag, header.length)) {
          cause = mismatch(conn_, op, header.tag, header.length);
          return Step::failed;
        } else if (op.payload_done > op.size) {
          // A receive of at most `size` bytes read that many, and the message was shorter.
          carry_.put_back(op.data + op.size, op.payload_done - op.size);
          got -= op.payload_done - op.size;
          op.payload_done = op.size;
        }
      }
      moved += got;
      if (moved >= budget && current->payload_done < current->size) return Step::yielded;
    } else if (n == 0 && dir_ == Direction::recv) {
      cause = kPeerClosed;
      return Step::failed;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // A blocking call sees EAGAIN when SO_RCVTIMEO/SO_SNDTIMEO expired, but also when the
      // socket was non-blocking for a moment: Connection::watch() sets and clears the mode of
      // the file it shares with its duplicate. Only the first is a timeout; for the second,
      // wait for the socket and try again.
      if (blocking && !timer_.stalled(conn_.timeout())) {
        wait_until_ready();
        continue;
      }
      return Step::would_block;
    } else if (errno != EINTR) {
      cause = errno == EPIPE || errno == ECONNRESET ? kPeerClosed : fmt::format("socket error: {}", std::strerror(errno));
      return Step::failed;
    }
  }
}

std::string FramedSocket::check_header(const Op& op, wire::FrameHeader& header) {
  try {
    header = wire::decode_frame(op.header);
  } catch (const TransportError& e) {
    return fmt::format("{} from rank {} (not a ringgrad stream, or its framing was lost)", e.what(), conn_.peer());
  }
  if (header.seq != frames_read_)
    return fmt::format("message #{} arrived where #{} was expected (the stream lost its framing)", header.seq, frames_read_);
  ++frames_read_;
  return {};
}

void FramedSocket::wait_until_ready() const {
  const auto left = timer_.deadline(conn_.timeout()) - StallTimer::Clock::now();
  pollfd p{conn_.fd(), static_cast<short>(dir_ == Direction::send ? POLLOUT : POLLIN), 0};
  ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(left).count())));
}

}  // namespace ringgrad::transport::detail
