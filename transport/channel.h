// Channel: one direction (send or receive) of the connection to one peer, a FIFO of operations
// in issue order. Exactly one driver at a time moves the bytes of the operation at the head:
// the caller's own thread for a blocking call on an idle channel (straight on the socket, no
// hand-off to another thread), the progress thread otherwise. Both drive with the same step();
// the caller's thread blocks in the system call, the progress thread waits with Asio.
//
// Streams: every message belongs to a stream (a communicator: the world is stream 0, each
// process group its own), and a receive matches the next message of its own stream. Within a
// stream messages match in issue order, as before; across streams they may interleave on the
// socket, so groups sharing a connection can run from different threads. A message whose
// stream has no receive posted is read into a held buffer (MPI's unexpected-message queue)
// until one is. A job with one stream never holds anything and reads straight into the
// caller's buffer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sys/uio.h>

#include "transport/wire.h"

namespace ringgrad::transport::detail {

enum class Direction { send, recv };
class Connection;

/// One send or receive: the caller's buffer, its frame header, and how far it got. Lives on the
/// caller's stack for a blocking call, on the heap behind a Request for an asynchronous one.
struct Op {
  Direction dir = Direction::send;
  uint32_t stream = 0;        // the communicator the message belongs to
  uint64_t tag = 0;
  std::byte* data = nullptr;  // a send only reads it
  uint64_t size = 0;          // payload bytes
  bool up_to = false;         // a receive of at most `size` bytes: size becomes the message's length
  uint64_t seq = 0;           // a send: position in this direction's byte stream
  wire::FrameBytes header{};  // send: encoded when queued; recv: filled from the socket
  uint64_t header_done = 0;
  uint64_t payload_done = 0;
  Op* next = nullptr;            // the channel's FIFO
  bool complete = false;         // guarded by the channel's mutex
  std::string error;             // set with complete when it failed
  std::shared_ptr<Connection> conn;  // for a Request: keeps its channel alive
  std::vector<std::byte> held;       // a message that arrived before its receive: its bytes
};

class Channel {
 public:
  Channel(Connection& conn, Direction dir) : conn_(conn), dir_(dir) {}

  /// Blocking send or receive of op; throws TransportError when it fails.
  void run(Op& op);
  /// Queues op and returns; tries it once on the caller's thread when the channel is idle.
  void start(Op& op);
  /// Blocks until op completes; throws its error. Enforces the timeout while the progress
  /// thread drives: no progress on the channel for that long fails the connection.
  void wait(Op& op);
  /// Whether op completed; throws its error.
  bool test(Op& op);
  /// Marks the channel failed with cause (the first cause wins) and completes every queued
  /// operation that no driver is working on; the driver completes its own on its next step.
  void fail(const std::string& cause);
  /// The progress thread's driver loop (runs on the progress thread only).
  void drive();
  /// After the progress thread stopped: completes every operation still queued with the failure.
  void abandon();

 private:
  enum class Driver { none, caller, progress };
  enum class Step { done, would_block, yielded, failed };

  bool enqueue_locked(Op& op);
  bool take_held_locked(Op& op);
  Op* redirect_locked(Op& op, const wire::FrameHeader& header, std::string& cause);
  void deliver_held_locked(std::unique_ptr<Op> held);
  void carry_over(const std::byte* bytes, uint64_t n);
  uint64_t take_carry(const iovec* iov, int count);
  Op* finish_head_locked(Op& op, bool ok);
  void hand_to_progress();
  Step step(Op*& op, bool blocking, uint64_t budget, std::string& cause);
  Step poll_small_receive(Op*& op, std::string& cause);
  std::string check_header(const Op& op, wire::FrameHeader& header);
  /// Whether a message of `tag` and `length` bytes is op's; a receive of at most op.size bytes
  /// then takes the message's length as its size.
  static bool accepts(Op& op, uint64_t tag, uint64_t length);
  std::string mismatch(const Op& op, uint64_t tag, uint64_t length) const;
  void drive_blocking(Op& op);
  void fail_all_locked();
  std::string message(const Op& op, const std::string& cause) const;
  std::string timeout_cause() const;
  // Whether the timeout has passed since the last byte moved; a wait for the socket to be
  // ready in this channel's direction, until then at most.
  bool timed_out() const;
  void wait_until_ready() const;
  void touch();

  Connection& conn_;
  const Direction dir_;
  std::mutex mutex_;
  std::condition_variable completed_;
  Op* head_ = nullptr;  // the operation being driven
  Op* tail_ = nullptr;
  Driver driver_ = Driver::none;
  std::string failure_;  // non-empty once failed: every later operation fails at once
  uint64_t next_seq_ = 0;
  // Receive side. The driver's own state, handed over with the driver under the mutex:
  uint64_t frames_read_ = 0;       // headers read so far (each must carry this seq)
  std::vector<std::byte> carry_;   // bytes read past a message's end, consumed first
  std::size_t carry_pos_ = 0;
  // Guarded by the mutex:
  std::unique_ptr<Op> arriving_;                           // the held message being read
  std::map<uint32_t, std::deque<std::unique_ptr<Op>>> held_;  // per stream, in arrival order
  std::atomic<int64_t> last_progress_{0};  // steady_clock ticks of the last byte moved
};

}  // namespace ringgrad::transport::detail
