// StallTimer: when a channel last moved a byte, and so when it has stalled. An operation fails the
// connection when nothing moved for the timeout (Config::timeout): counted from when the
// operation reached the head of its queue or from its last byte, whichever is later. The
// driver writes it; any thread may read it (a waiter enforces the timeout while the progress
// thread drives).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "transport/net.h"

namespace ringgrad::transport::detail {

class StallTimer {
 public:
  using Clock = net::Clock;

  /// Marks progress now: an operation reached the head, or bytes moved.
  void touch() { last_progress_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed); }
  /// When the channel stalls for `timeout` unless a byte moves first.
  Clock::time_point deadline(std::chrono::milliseconds timeout) const {
    return Clock::time_point(Clock::duration(last_progress_.load())) + timeout;
  }
  /// Whether nothing moved for `timeout`.
  bool stalled(std::chrono::milliseconds timeout) const { return Clock::now() >= deadline(timeout); }

 private:
  std::atomic<int64_t> last_progress_{0};  // Clock ticks of the last progress
};

}  // namespace ringgrad::transport::detail
