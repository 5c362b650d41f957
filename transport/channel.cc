// Channel: the queue's state under one mutex, the three drivers, and completion.
//
// Invariant: the queue is non-empty exactly when a driver is set, and only the driver touches
// the head's buffer and the FramedSocket. The role passes under the mutex: a caller takes it on
// an idle channel (enqueue_locked); a caller whose own operation completed with asynchronous
// ones queued behind it hands it to the progress thread; whoever finishes the last operation
// leaves the channel idle.

#include "transport/channel.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include <asio/post.hpp>

#include "transport/channel_errors.h"
#include "transport/connection.h"
#include "transport/error.h"
#include "transport/small_receive_poll.h"

namespace ringgrad::transport::detail {
namespace {

using namespace std::chrono_literals;

// The progress thread moves at most this much for one operation before letting the other
// channels it serves run (a ring sends and receives at once on one thread).
constexpr uint64_t kProgressBudget = uint64_t{4} << 20;

}  // namespace

Channel::Channel(Connection& conn, Direction dir)
    : conn_(conn), dir_(dir), streams_(conn), socket_(conn, dir, timer_, *this) {}

// --- The queue ---------------------------------------------------------------------------------

// Queues op; returns whether the caller now drives (the channel was idle).
bool Channel::enqueue_locked(Op& op) {
  op.seq = next_seq_++;
  if (dir_ == Direction::send) op.header = wire::encode_frame({op.stream, op.seq, op.tag, op.size});
  queue_.push_back(op);
  if (driver_ != Driver::none) return false;
  driver_ = Driver::caller;
  timer_.touch();  // the timeout counts from when an operation reaches the head
  return true;
}

// Completes the head op and pops it; returns the next head (its driver stays the same), or
// nullptr with the channel idle.
Op* Channel::finish_head_locked(Op& op, bool ok) {
  op.complete = true;
  if (!ok) op.error = op_failure(conn_, dir_, op, failure_);
  queue_.pop_front();
  if (ok && streams_.is_arriving(op)) streams_.arrived(queue_);
  if (!failure_.empty()) fail_all_locked();
  if (queue_.empty()) driver_ = Driver::none;
  else timer_.touch();
  completed_.notify_all();
  return queue_.head();
}

// Called by the driver, whose step read a header of another stream.
Op* Channel::reroute(Op& head, const wire::FrameHeader& header, CarryOver& carry, std::string& cause) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) {
    cause = failure_;
    return nullptr;
  }
  return streams_.route(queue_, head, header, carry, cause);
}

void Channel::fail(const std::string& cause) {
  std::lock_guard lock(mutex_);
  if (failure_.empty()) failure_ = cause;
  if (driver_ == Driver::none) return;
  // The head belongs to its driver; everything behind it fails now.
  for (Op* op = queue_.take_behind_head(); op != nullptr;) {
    Op* next = op->next;
    op->complete = true;
    op->error = op_failure(conn_, dir_, *op, failure_);
    op = next;
  }
  completed_.notify_all();
}

void Channel::fail_all_locked() {
  while (Op* op = queue_.head()) {
    queue_.pop_front();
    op->complete = true;
    op->error = op_failure(conn_, dir_, *op, failure_);
  }
  driver_ = Driver::none;
  completed_.notify_all();
}

void Channel::abandon() {
  std::lock_guard lock(mutex_);
  if (failure_.empty()) failure_ = "the transport was shut down";
  fail_all_locked();
}

// --- Drivers -----------------------------------------------------------------------------------

void Channel::run(Op& op) {
  {
    std::unique_lock lock(mutex_);
    if (!failure_.empty()) throw TransportError(op_failure(conn_, dir_, op, failure_));
    if (dir_ == Direction::recv && streams_.take_held(op)) {
      if (!op.error.empty()) throw TransportError(op.error);
      return;
    }
    if (!enqueue_locked(op)) {
      lock.unlock();
      return wait(op);  // others are queued ahead: the progress thread drives them and this one
    }
  }
  drive_on_caller_thread(op);
  if (!op.error.empty()) throw TransportError(op.error);
}

// Drives on the caller's thread with blocking system calls until own completes; each call fails
// only after the timeout passes without a byte moved. Messages of other streams that arrive
// first are read on the way. Another thread that fails the connection shuts the socket down,
// which ends a blocked call at once.
void Channel::drive_on_caller_thread(Op& own) {
  Op* op = &own;
  for (;;) {
    std::string cause;
    Step result = poll_small_receive(socket_, op, conn_.receive_poll(), cause);
    if (result == Step::would_block) result = socket_.step(op, /*blocking=*/true, UINT64_MAX, cause);
    if (result == Step::would_block) cause = no_progress(conn_);
    if (result != Step::done) conn_.fail(cause);
    std::unique_lock lock(mutex_);
    Op* next = finish_head_locked(*op, result == Step::done);
    if (own.complete) {
      if (next == nullptr) return;
      lock.unlock();
      return hand_to_progress_thread();  // asynchronous operations were queued behind this one
    }
    op = next;  // own is still queued, so next is not null
  }
}

void Channel::start(Op& own) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) {
      own.complete = true;
      own.error = op_failure(conn_, dir_, own, failure_);
      return;
    }
    if (dir_ == Direction::recv && streams_.take_held(own)) return;
    if (!enqueue_locked(own)) return;
  }
  // Idle channel: one attempt on the caller's thread (a small send usually completes here,
  // without waking the progress thread), then the progress thread takes over.
  Op* op = &own;
  std::string cause;
  Step result = socket_.step(op, /*blocking=*/false, kProgressBudget, cause);
  if (result == Step::failed) conn_.fail(cause);
  if (result == Step::done || result == Step::failed) {
    std::unique_lock lock(mutex_);
    if (finish_head_locked(*op, result == Step::done) == nullptr) return;
  }
  hand_to_progress_thread();
}

// Called with driver_ == caller and a non-empty queue: the progress thread takes over.
void Channel::hand_to_progress_thread() {
  {
    std::lock_guard lock(mutex_);
    driver_ = Driver::progress;
  }
  asio::post(conn_.io(), [conn = conn_.shared_from_this(), this] {
    conn_.watch();
    drive_on_progress_thread();
  });
}

// The progress thread's loop: steps the head without waiting, at most kProgressBudget bytes at
// a time, and waits for the socket with Asio when it would block.
void Channel::drive_on_progress_thread() {
  for (;;) {
    Op* op;
    {
      std::lock_guard lock(mutex_);
      if (!failure_.empty()) {
        fail_all_locked();
        return conn_.unwatch();
      }
      op = queue_.head();
    }
    std::string cause;
    switch (socket_.step(op, /*blocking=*/false, kProgressBudget, cause)) {
      case Step::done: {
        std::unique_lock lock(mutex_);
        if (finish_head_locked(*op, true) == nullptr) {
          lock.unlock();
          return conn_.unwatch();
        }
        break;  // drive the next one
      }
      case Step::failed:
        conn_.fail(cause);
        break;  // the loop completes everything with the failure
      case Step::yielded:
        asio::post(conn_.io(), [conn = conn_.shared_from_this(), this] { drive_on_progress_thread(); });
        return;
      case Step::would_block:
        conn_.watcher().async_wait(
            dir_ == Direction::send ? asio::posix::descriptor_base::wait_write : asio::posix::descriptor_base::wait_read,
            [conn = conn_.shared_from_this(), this](asio::error_code) { drive_on_progress_thread(); });
        return;
    }
  }
}

// --- Completion --------------------------------------------------------------------------------

void Channel::wait(Op& op) {
  std::unique_lock lock(mutex_);
  while (!op.complete) {
    const auto deadline = timer_.deadline(conn_.timeout());
    if (driver_ == Driver::progress && failure_.empty() && StallTimer::Clock::now() >= deadline) {
      lock.unlock();
      conn_.fail(no_progress(conn_));  // the progress thread wakes and completes op with it
      lock.lock();
      continue;
    }
    // A caller-thread driver enforces its own timeout; recheck now and then all the same.
    completed_.wait_until(lock, std::max(deadline, StallTimer::Clock::now() + 10ms));
  }
  if (!op.error.empty()) throw TransportError(op.error);
}

bool Channel::test(Op& op) {
  std::lock_guard lock(mutex_);
  if (op.complete && !op.error.empty()) throw TransportError(op.error);
  return op.complete;
}

}  // namespace ringgrad::transport::detail
