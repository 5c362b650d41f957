// Op: one send or receive as a channel moves it: the caller's buffer, the message's frame
// header, how far it got and how it ended. A blocking call keeps its Op on the caller's stack,
// an asynchronous one on the heap behind a Request; a message that arrives before its receive
// is read into an Op of its own (stream_demux.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/wire.h"

namespace ringgrad::transport::detail {

enum class Direction { send, recv };
class Connection;

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
  Op* next = nullptr;            // the channel's FIFO (op_queue.h)
  bool complete = false;         // guarded by the channel's mutex
  std::string error;             // set with complete when it failed
  std::shared_ptr<Connection> conn;  // for a Request: keeps its channel alive
  std::vector<std::byte> held;       // a message that arrived before its receive: its bytes

  /// Whether a message of `message_tag` and `length` payload bytes is this receive's. A receive
  /// of at most `size` bytes that accepts one takes the message's length as its size.
  bool accepts(uint64_t message_tag, uint64_t length) {
    if (message_tag != tag || length > size || (length < size && !up_to)) return false;
    size = length;
    up_to = false;
    return true;
  }
};

}  // namespace ringgrad::transport::detail
