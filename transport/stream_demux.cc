// StreamDemux: moves a message between the head's buffer, a queued receive of its stream and
// the held buffers. Every path here runs under the channel's mutex.

#include "transport/stream_demux.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "transport/channel_errors.h"

namespace ringgrad::transport::detail {

bool StreamDemux::take_held(Op& op) {
  auto it = held_.find(op.stream);
  if (it == held_.end()) return false;
  std::unique_ptr<Op> held = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) held_.erase(it);
  op.complete = true;
  op.header_done = wire::kFrameHeaderBytes;
  if (!op.accepts(held->tag, held->size)) {
    op.error = op_failure(conn_, Direction::recv, op, mismatch(conn_, op, held->tag, held->size));
    return true;
  }
  if (op.size > 0) std::memcpy(op.data, held->data, op.size);
  op.payload_done = op.size;
  return true;
}

Op* StreamDemux::route(OpQueue& queue, Op& head, const wire::FrameHeader& header, CarryOver& carry,
                       std::string& cause) {
  // The head is of another stream, so the first queued receive of this one is behind it.
  Op* target = queue.first_of_stream(header.stream);
  if (target != nullptr) {
    if (!target->accepts(header.tag, header.length)) {
      cause = mismatch(conn_, *target, header.tag, header.length);
      return nullptr;
    }
    queue.remove(*target);
  } else {
    target = hold(header, cause);
    if (target == nullptr) return nullptr;
  }
  // Move what was read past the header into target's buffer; what lies past the message's end
  // is the start of the next one.
  const uint64_t read = head.payload_done, mine = std::min(read, header.length);
  if (mine > 0) std::memcpy(target->data, head.data, mine);
  if (read > mine) carry.put_back(head.data + mine, read - mine);
  target->header = head.header;
  target->header_done = wire::kFrameHeaderBytes;
  target->payload_done = mine;
  head.header_done = 0;
  head.payload_done = 0;
  queue.push_front(*target);
  return target;
}

// A new held buffer for the message of header, as the message being read.
Op* StreamDemux::hold(const wire::FrameHeader& header, std::string& cause) {
  arriving_ = std::make_unique<Op>();
  try {
    arriving_->held.resize(header.length);
  } catch (const std::bad_alloc&) {
    cause = fmt::format("no memory to hold a message of {} bytes for stream {} until it is received", header.length,
                        header.stream);
    return nullptr;
  }
  arriving_->dir = Direction::recv;
  arriving_->stream = header.stream;
  arriving_->tag = header.tag;
  arriving_->size = header.length;
  arriving_->data = arriving_->held.data();
  return arriving_.get();
}

void StreamDemux::arrived(OpQueue& queue) {
  std::unique_ptr<Op> held = std::move(arriving_);
  Op* receive = queue.first_of_stream(held->stream);
  if (receive == nullptr) {
    held_[held->stream].push_back(std::move(held));
    return;
  }
  queue.remove(*receive);
  held_[held->stream].push_front(std::move(held));
  take_held(*receive);
}

}  // namespace ringgrad::transport::detail
