// Small-receive polling: a speed trick of the caller's-thread driver (channel.cc). The plain
// road is a blocking recvmsg, which sleeps in the kernel until bytes arrive; the thread must
// then be woken. Where idle CPUs halt (as they may on a virtual machine), that wake-up can take
// longer than the message took to come: a thread that slept took 20-25 us more to see an 8-byte
// reply over loopback than one that polled (docs/transport.md). So a small blocking receive
// first reads without waiting, for up to Config::receive_poll, and only then sleeps as before.
//
// Chosen for receives of at most kPolledReceiveBytes (collectives send messages that small from
// the caller's thread, so the poll rarely takes the CPU of a progress thread moving a large
// one) when Config::receive_poll is not 0: receive_poll_default() makes it 50 us where this
// process may run on a CPU for each rank of its host, 0 where the poll would take the CPU a
// peer needs to answer.
#pragma once

#include <chrono>
#include <string>

#include "transport/framed_socket.h"
#include "transport/op.h"

namespace ringgrad::transport::detail {

/// Steps op without waiting until it completes, fails, or `poll` has passed; does nothing for a
/// send, a receive of more than kPolledReceiveBytes, or a poll of 0. Returns what the last step
/// returned: done; failed (a closed or failed connection ends the poll at once); or would_block,
/// with whatever arrived so far moved, and the caller then sleeps in a blocking step. As after
/// any step, op may now point at another stream's receive.
Step poll_small_receive(FramedSocket& socket, Op*& op, std::chrono::microseconds poll, std::string& cause);

}  // namespace ringgrad::transport::detail
