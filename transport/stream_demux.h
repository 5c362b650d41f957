// StreamDemux: which receive a message belongs to, when several streams share a connection.
// Every message names its stream (a communicator: the world is stream 0, each process group its
// own), and a receive takes the next message of its own stream: within a stream in issue order,
// across streams in whatever order they arrive, so groups sharing a connection can run from
// different threads. A message whose stream has no receive posted is read into a buffer of its
// own and held until one is (MPI's unexpected-message queue); the receive posted then completes
// at once with a copy. While a stream has held messages it has no queued receive.
//
// Cost: none in a job with one stream, where every header names the head's own stream and the
// channel never calls route(); elsewhere a copy of each message that arrived before its
// receive, and memory for it meanwhile. Not thread-safe: the channel's mutex guards it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "transport/carry_over.h"
#include "transport/op.h"
#include "transport/op_queue.h"
#include "transport/wire.h"

namespace ringgrad::transport::detail {

class StreamDemux {
 public:
  /// conn names the peer in error messages.
  explicit StreamDemux(const Connection& conn) : conn_(conn) {}

  /// A receive being posted takes the first held message of its stream, if there is one; op is
  /// then complete, with a copy of the message, or with a mismatch error when op does not accept
  /// it. Returns whether op took one.
  bool take_held(Op& op);

  /// The header just read into head's buffer names another stream. The message goes to the first
  /// queued receive of that stream or, with none, to a new held buffer; what was read past the
  /// header moves there with it (bytes read past the message's end go to carry), and that
  /// receive becomes the head of queue, in front of head, to be read on. Returns it, or nullptr
  /// with cause when it does not accept the message or no memory can hold the message.
  Op* route(OpQueue& queue, Op& head, const wire::FrameHeader& header, CarryOver& carry, std::string& cause);

  /// Whether op is the held buffer of a message being read.
  bool is_arriving(const Op& op) const { return &op == arriving_.get(); }
  /// The message being read into a held buffer is complete: it goes to the first queued receive
  /// of its stream, posted meanwhile, or waits among the held ones.
  void arrived(OpQueue& queue);

 private:
  Op* hold(const wire::FrameHeader& header, std::string& cause);

  const Connection& conn_;
  std::unique_ptr<Op> arriving_;                              // the held message being read
  std::map<uint32_t, std::deque<std::unique_ptr<Op>>> held_;  // per stream, in arrival order
};

}  // namespace ringgrad::transport::detail
