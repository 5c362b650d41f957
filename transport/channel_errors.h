// The words of a channel's failures: what a person reads when a send or receive fails (the
// rank, the peer, the operation, how far it got, and why) and the causes that more than one
// part of the channel reports.
#pragma once

#include <cstdint>
#include <string>

#include "transport/op.h"

namespace ringgrad::transport::detail {

class Connection;

/// The cause when the peer's end of the socket is closed or reset.
inline constexpr const char* kPeerClosed = "the peer closed the connection (did it exit or crash?)";

/// "ringgrad transport: rank R: recv from rank P (tag, N bytes) failed after k of N bytes:
/// cause"; a receive of at most N bytes that has not seen its message's header says "at most".
std::string op_failure(const Connection& conn, Direction dir, const Op& op, const std::string& cause);
/// The cause when the next message of op's stream is not one op accepts (Op::accepts).
std::string mismatch(const Connection& conn, const Op& op, uint64_t tag, uint64_t length);
/// The cause when nothing moved for the connection's timeout (stall_timer.h).
std::string no_progress(const Connection& conn);

}  // namespace ringgrad::transport::detail
