// The words of a channel's failures, formatted from the connection (ranks, timeout) and the
// operation (tag, sizes, progress).

#include "transport/channel_errors.h"

#include <chrono>

#include <fmt/format.h>

#include "transport/connection.h"
#include "transport/tag_names.h"

namespace ringgrad::transport::detail {

std::string op_failure(const Connection& conn, Direction dir, const Op& op, const std::string& cause) {
  const bool send = dir == Direction::send;
  const char* bound = op.up_to ? "at most " : "";
  return fmt::format("ringgrad transport: rank {}: {} {} rank {} ({}, {}{} bytes) failed after {} of {}{} bytes: {}",
                     conn.local_rank(), send ? "send" : "recv", send ? "to" : "from", conn.peer(), describe_tag(op.tag),
                     bound, op.size, op.payload_done, bound, op.size, cause);
}

std::string mismatch(const Connection& conn, const Op& op, uint64_t tag, uint64_t length) {
  return fmt::format("mismatch: the next message from rank {}{} has {} and {} bytes, this receive expects {} and {}{} "
                     "bytes", conn.peer(), op.stream == 0 ? "" : fmt::format(" on stream {}", op.stream), describe_tag(tag),
                     length, describe_tag(op.tag), op.up_to ? "at most " : "", op.size);
}

std::string no_progress(const Connection& conn) {
  return fmt::format("no progress for {} s (rank {} may have hung or be waiting on something else; "
                     "set the timeout with RINGGRAD_TIMEOUT or Config::timeout)",
                     std::chrono::duration<double>(conn.timeout()).count(), conn.peer());
}

}  // namespace ringgrad::transport::detail
