// Channel: the FIFO of one direction of a connection and the step that moves its bytes.
//
// Invariant: the queue is non-empty exactly when a driver is set, and only the driver touches
// the head's buffer. A blocking call on an idle channel drives on the caller's thread with
// blocking system calls, so the common synchronous path costs what a plain socket costs; once
// asynchronous operations queue up, the progress thread drives and the caller waits.

#include "transport/channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <asio/post.hpp>
#include <fmt/format.h>

#include "transport/connection.h"
#include "transport/error.h"
#include "transport/net.h"

namespace ringgrad::transport::detail {
namespace {

using Clock = net::Clock;
using namespace std::chrono_literals;

// The progress thread moves at most this much for one operation before letting the other
// channels it serves run (a ring sends and receives at once on one thread).
constexpr uint64_t kProgressBudget = uint64_t{4} << 20;

const char* peer_closed = "the peer closed the connection (did it exit or crash?)";

}  // namespace

// --- Queueing ----------------------------------------------------------------------------------

bool Channel::enqueue_locked(Op& op) {
  op.seq = next_seq_++;
  if (dir_ == Direction::send) op.header = wire::encode_frame({op.seq, op.tag, op.size});
  op.next = nullptr;
  (tail_ != nullptr ? tail_->next : head_) = &op;
  tail_ = &op;
  if (driver_ != Driver::none) return false;
  driver_ = Driver::caller;
  touch();  // the timeout counts from when an operation reaches the head
  return true;
}

// Completes the head op and pops it; returns the next head (its driver stays the same), or
// nullptr with the channel idle.
Op* Channel::finish_head_locked(Op& op, bool ok) {
  op.complete = true;
  if (!ok) op.error = message(op, failure_);
  head_ = op.next;
  if (head_ == nullptr) tail_ = nullptr;
  if (!failure_.empty()) fail_all_locked();
  if (head_ == nullptr) driver_ = Driver::none;
  else touch();
  completed_.notify_all();
  return head_;
}

void Channel::hand_to_progress() {
  // Called with driver_ == caller and a non-empty queue: the progress thread takes over.
  {
    std::lock_guard lock(mutex_);
    driver_ = Driver::progress;
  }
  asio::post(conn_.io(), [conn = conn_.shared_from_this(), this] {
    conn_.watch();
    drive();
  });
}

void Channel::fail(const std::string& cause) {
  std::lock_guard lock(mutex_);
  if (failure_.empty()) failure_ = cause;
  if (driver_ == Driver::none) return;
  // The head belongs to its driver; everything behind it fails now.
  for (Op* op = head_->next; op != nullptr;) {
    Op* next = op->next;
    op->complete = true;
    op->error = message(*op, failure_);
    op = next;
  }
  head_->next = nullptr;
  tail_ = head_;
  completed_.notify_all();
}

void Channel::fail_all_locked() {
  while (head_ != nullptr) {
    head_->complete = true;
    head_->error = message(*head_, failure_);
    head_ = head_->next;
  }
  tail_ = nullptr;
  driver_ = Driver::none;
  completed_.notify_all();
}

void Channel::abandon() {
  std::lock_guard lock(mutex_);
  if (failure_.empty()) failure_ = "the transport was shut down";
  fail_all_locked();
}

// --- The step: sendmsg/recvmsg of header and payload --------------------------------------------

// Moves bytes of op until it is done, the socket would block (blocking: SO_SNDTIMEO/SO_RCVTIMEO
// expired with no byte moved), budget bytes moved, or an error.
Channel::Step Channel::step(Op& op, bool blocking, uint64_t budget, std::string& cause) {
  uint64_t moved = 0;
  for (;;) {
    iovec iov[2];
    int count = 0;
    if (op.header_done < wire::kFrameHeaderBytes)
      iov[count++] = {op.header.data() + op.header_done, wire::kFrameHeaderBytes - op.header_done};
    // The payload goes straight between the caller's buffer and the socket: no copy. A receive
    // reads the header and the expected payload in one call; should the header not match,
    // the buffer's contents are unspecified and the error is raised before anything else.
    if (op.payload_done < op.size) iov[count++] = {op.data + op.payload_done, op.size - op.payload_done};
    if (count == 0) return Step::done;

    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    // Once the header is checked, a blocking receive may wait for the whole payload at once.
    const int flags = !blocking ? MSG_DONTWAIT : op.header_done == wire::kFrameHeaderBytes ? MSG_WAITALL : 0;
    ssize_t n = dir_ == Direction::send ? ::sendmsg(conn_.fd(), &msg, flags | MSG_NOSIGNAL) : ::recvmsg(conn_.fd(), &msg, flags);
    if (n > 0) {
      auto got = static_cast<uint64_t>(n);
      const bool had_header = op.header_done == wire::kFrameHeaderBytes;
      const uint64_t to_header = std::min<uint64_t>(got, wire::kFrameHeaderBytes - op.header_done);
      op.header_done += to_header;
      op.payload_done += got - to_header;
      touch();
      if (dir_ == Direction::recv && !had_header && op.header_done == wire::kFrameHeaderBytes) {
        cause = check_header(op);
        if (!cause.empty()) return Step::failed;
      }
      moved += got;
      if (moved >= budget && op.payload_done < op.size) return Step::yielded;
    } else if (n == 0 && dir_ == Direction::recv) {
      cause = peer_closed;
      return Step::failed;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // A blocking call sees EAGAIN when SO_RCVTIMEO/SO_SNDTIMEO expired, but also when the
      // socket was non-blocking for a moment: Connection::watch() sets and clears the mode of
      // the file it shares with its duplicate. Only the first is a timeout; for the second,
      // wait for the socket and try again.
      if (blocking && !timed_out()) {
        wait_until_ready();
        continue;
      }
      return Step::would_block;
    } else if (errno != EINTR) {
      cause = errno == EPIPE || errno == ECONNRESET ? peer_closed : fmt::format("socket error: {}", std::strerror(errno));
      return Step::failed;
    }
  }
}

std::string Channel::check_header(const Op& op) const {
  wire::FrameHeader header;
  try {
    header = wire::decode_frame(op.header);
  } catch (const TransportError& e) {
    return fmt::format("{} from rank {} (not a ringgrad stream, or its framing was lost)", e.what(), conn_.peer());
  }
  if (header.seq != op.seq)
    return fmt::format("message #{} arrived where #{} was expected (the stream lost its framing)", header.seq, op.seq);
  if (header.tag != op.tag || header.length != op.size)
    return fmt::format("mismatch: message #{} from rank {} has tag {} and {} bytes, this receive expects tag {} and {} bytes",
                       op.seq, conn_.peer(), header.tag, header.length, op.tag, op.size);
  return {};
}

// --- Drivers -----------------------------------------------------------------------------------

void Channel::run(Op& op) {
  {
    std::unique_lock lock(mutex_);
    if (!failure_.empty()) throw TransportError(message(op, failure_));
    if (!enqueue_locked(op)) {
      lock.unlock();
      return wait(op);  // others are queued ahead: the progress thread drives them and this one
    }
  }
  drive_blocking(op);
  if (!op.error.empty()) throw TransportError(op.error);
}

// Drives op on the caller's thread with blocking system calls; each one fails only after the
// timeout passes without a byte moved. Another thread that fails the connection shuts the
// socket down, which ends a blocked call at once.
void Channel::drive_blocking(Op& op) {
  std::string cause;
  Step result = step(op, /*blocking=*/true, UINT64_MAX, cause);
  if (result == Step::would_block) cause = timeout_cause();
  if (result != Step::done) conn_.fail(cause);
  std::unique_lock lock(mutex_);
  if (finish_head_locked(op, result == Step::done) != nullptr) {
    lock.unlock();
    hand_to_progress();  // asynchronous operations were queued behind this one
  }
}

void Channel::start(Op& op) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) {
      op.complete = true;
      op.error = message(op, failure_);
      return;
    }
    if (!enqueue_locked(op)) return;
  }
  // Idle channel: one attempt on the caller's thread (a small send usually completes here),
  // then the progress thread takes over.
  std::string cause;
  Step result = step(op, /*blocking=*/false, kProgressBudget, cause);
  if (result == Step::failed) conn_.fail(cause);
  if (result == Step::done || result == Step::failed) {
    std::unique_lock lock(mutex_);
    if (finish_head_locked(op, result == Step::done) == nullptr) return;
  }
  hand_to_progress();
}

void Channel::drive() {
  for (;;) {
    Op* op;
    {
      std::lock_guard lock(mutex_);
      if (!failure_.empty()) {
        fail_all_locked();
        return conn_.unwatch();
      }
      op = head_;
    }
    std::string cause;
    switch (step(*op, /*blocking=*/false, kProgressBudget, cause)) {
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
        asio::post(conn_.io(), [conn = conn_.shared_from_this(), this] { drive(); });
        return;
      case Step::would_block:
        conn_.watcher().async_wait(
            dir_ == Direction::send ? asio::posix::descriptor_base::wait_write : asio::posix::descriptor_base::wait_read,
            [conn = conn_.shared_from_this(), this](asio::error_code) { drive(); });
        return;
    }
  }
}

// --- Completion --------------------------------------------------------------------------------

void Channel::wait(Op& op) {
  std::unique_lock lock(mutex_);
  while (!op.complete) {
    auto deadline = Clock::time_point(Clock::duration(last_progress_.load())) + conn_.timeout();
    if (driver_ == Driver::progress && failure_.empty() && Clock::now() >= deadline) {
      lock.unlock();
      conn_.fail(timeout_cause());  // the progress thread wakes and completes op with it
      lock.lock();
      continue;
    }
    // A caller-thread driver enforces its own timeout; recheck now and then all the same.
    completed_.wait_until(lock, std::max(deadline, Clock::now() + 10ms));
  }
  if (!op.error.empty()) throw TransportError(op.error);
}

bool Channel::test(Op& op) {
  std::lock_guard lock(mutex_);
  if (op.complete && !op.error.empty()) throw TransportError(op.error);
  return op.complete;
}

// --- Messages ----------------------------------------------------------------------------------

std::string Channel::message(const Op& op, const std::string& cause) const {
  const bool send = dir_ == Direction::send;
  return fmt::format("ringgrad transport: rank {}: {} {} rank {} (tag {}, {} bytes) failed after {} of {} bytes: {}",
                     conn_.local_rank(), send ? "send" : "recv", send ? "to" : "from", conn_.peer(), op.tag, op.size,
                     op.payload_done, op.size, cause);
}

std::string Channel::timeout_cause() const {
  return fmt::format("no progress for {} s (rank {} may have hung or be waiting on something else; "
                     "set the timeout with RINGGRAD_TIMEOUT or Config::timeout)",
                     std::chrono::duration<double>(conn_.timeout()).count(), conn_.peer());
}

bool Channel::timed_out() const {
  return Clock::now() - Clock::time_point(Clock::duration(last_progress_.load())) >= conn_.timeout();
}

void Channel::wait_until_ready() const {
  const auto left = Clock::time_point(Clock::duration(last_progress_.load())) + conn_.timeout() - Clock::now();
  pollfd p{conn_.fd(), static_cast<short>(dir_ == Direction::send ? POLLOUT : POLLIN), 0};
  ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(left).count())));
}

void Channel::touch() { last_progress_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed); }

}  // namespace ringgrad::transport::detail
