// FramedSocket: one direction of a peer's socket as a sequence of frames (wire.h: a 32-byte
// header, then the payload). step() moves the header and payload of the operation at the head
// of the channel's queue, both in one sendmsg or recvmsg, straight between the caller's buffer
// and the socket: no copy. The receive side checks each header (magic, sequence number, stream,
// tag, length) and reads what it kept past the last message's end (carry_over.h) before the
// socket. Used by one driver at a time: its state is handed over with the driver.
#pragma once

#include <cstdint>
#include <string>

#include "transport/carry_over.h"
#include "transport/op.h"
#include "transport/stall_timer.h"
#include "transport/wire.h"

namespace ringgrad::transport::detail {

class Connection;

/// How a step ended: the operation is done; the socket would block (or, for a blocking step,
/// the timeout passed with nothing moved); the step moved its budget and lets other channels
/// run; or it failed, with a cause.
enum class Step { done, would_block, yielded, failed };

/// Where a received message whose header names another stream goes (the channel, which holds
/// the queue and the held messages under its mutex: StreamDemux::route). Returns the receive to
/// read on, now the head of the queue, or nullptr with cause.
class StreamRouter {
 public:
  virtual Op* reroute(Op& head, const wire::FrameHeader& header, CarryOver& carry, std::string& cause) = 0;

 protected:
  ~StreamRouter() = default;
};

class FramedSocket {
 public:
  /// Moves bytes of conn's socket in direction dir; marks each byte moved on timer.
  FramedSocket(Connection& conn, Direction dir, StallTimer& timer, StreamRouter& router)
      : conn_(conn), dir_(dir), timer_(timer), router_(router) {}

  Direction direction() const { return dir_; }

  /// Moves bytes of op until it is done, the socket would block, `budget` bytes moved, or an
  /// error. blocking: the step sleeps in the system calls, and would_block means the timeout
  /// passed with nothing moved; otherwise it passes MSG_DONTWAIT. A receive whose header names
  /// another stream goes on with that message's own receive (StreamRouter): op is set to it.
  Step step(Op*& op, bool blocking, uint64_t budget, std::string& cause);

 private:
  // The framing: magic and sequence number; counts the header as read. Returns the cause of a
  // failure, empty when the header is good.
  std::string check_header(const Op& op, wire::FrameHeader& header);
  // Sleeps until the socket is ready in this direction, at most until the stall deadline.
  void wait_until_ready() const;

  Connection& conn_;
  const Direction dir_;
  StallTimer& timer_;
  StreamRouter& router_;
  uint64_t frames_read_ = 0;  // receive side: headers read so far (each must carry this seq)
  CarryOver carry_;           // receive side: bytes read past a message's end
};

}  // namespace ringgrad::transport::detail
