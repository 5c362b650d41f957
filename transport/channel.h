// Channel: one direction (send or receive) of the connection to one peer: a FIFO of operations
// in issue order, and the driver that moves the bytes of the one at its head. Exactly one
// driver at a time:
//   - the caller's own thread, for a blocking call on an idle channel: straight on the socket
//     with blocking system calls, so the synchronous path costs what a plain socket costs (a
//     hand-off to another thread would add a wake-up to every message);
//   - the progress thread otherwise: once asynchronous operations queue up it drives them, with
//     non-blocking calls and Asio's readiness waits, and callers wait for completion.
// Both move bytes with the same FramedSocket::step.
//
// The parts, in the order a message meets them:
//   op.h, op_queue.h      one send or receive; the FIFO (no allocation per operation)
//   small_receive_poll.h  a small blocking receive polls before it sleeps (a speed trick)
//   framed_socket.h       the step: sendmsg/recvmsg of header and payload; the header's checks
//   carry_over.h          bytes read past a message's end, read before the socket
//   stream_demux.h        streams (communicators) sharing the connection; held messages
//   stall_timer.h         the timeout: nothing moved for that long fails the connection
//   channel_errors.h      what a failed operation says
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "transport/carry_over.h"
#include "transport/framed_socket.h"
#include "transport/op.h"
#include "transport/op_queue.h"
#include "transport/stall_timer.h"
#include "transport/stream_demux.h"
#include "transport/wire.h"

namespace ringgrad::transport::detail {

class Connection;

class Channel final : private StreamRouter {
 public:
  /// The channel of direction dir of conn's socket.
  Channel(Connection& conn, Direction dir);

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
  /// After the progress thread stopped: completes every operation still queued with the failure.
  void abandon();

 private:
  enum class Driver { none, caller, progress };

  bool enqueue_locked(Op& op);
  Op* finish_head_locked(Op& op, bool ok);
  void fail_all_locked();
  Op* reroute(Op& head, const wire::FrameHeader& header, CarryOver& carry, std::string& cause) override;
  void drive_on_caller_thread(Op& own);
  void hand_to_progress_thread();
  void drive_on_progress_thread();

  Connection& conn_;
  const Direction dir_;
  std::mutex mutex_;
  std::condition_variable completed_;
  // Guarded by the mutex:
  OpQueue queue_;          // the head is the operation being driven
  Driver driver_ = Driver::none;
  std::string failure_;    // non-empty once failed: every later operation fails at once
  uint64_t next_seq_ = 0;
  StreamDemux streams_;
  // The driver's own, handed over with the driver under the mutex:
  StallTimer timer_;       // read by any thread
  FramedSocket socket_;
};

}  // namespace ringgrad::transport::detail
