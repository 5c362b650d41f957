// Channel: the FIFO of one direction of a connection and the step that moves its bytes.
//
// Invariant: the queue is non-empty exactly when a driver is set, and only the driver touches
// the head's buffer. A blocking call on an idle channel drives on the caller's thread with
// blocking system calls, so the common synchronous path costs what a plain socket costs; once
// asynchronous operations queue up, the progress thread drives and the caller waits.
//
// Streams on the receive side: the head's header and payload are read in one call. When the
// header names another stream, the message goes to the first queued receive of that stream or,
// with none, to a held buffer; what was already read into the head's buffer moves with it (and
// bytes read past the message's end are kept in carry_ and consumed before the socket). Held
// messages wait, per stream, for the next receive of their stream: while a stream has held
// messages it has no queued receive. A receive of at most N bytes (recv_up_to) reads N after the
// header as well, in the same one call, and keeps what lies past its message's end in carry_.

#include "transport/channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <asio/post.hpp>
#include <fmt/format.h>

#include "transport/config.h"
#include "transport/connection.h"
#include "transport/error.h"
#include "transport/net.h"
#include "transport/tag_names.h"

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
  if (dir_ == Direction::send) op.header = wire::encode_frame({op.stream, op.seq, op.tag, op.size});
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
  if (ok && &op == arriving_.get()) deliver_held_locked(std::move(arriving_));
  if (!failure_.empty()) fail_all_locked();
  if (head_ == nullptr) driver_ = Driver::none;
  else touch();
  completed_.notify_all();
  return head_;
}

// --- Streams: held messages ------------------------------------------------------------------

// A receive posted after its message arrived takes it from the held ones (and is complete).
bool Channel::take_held_locked(Op& op) {
  auto it = held_.find(op.stream);
  if (it == held_.end()) return false;
  std::unique_ptr<Op> held = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) held_.erase(it);
  op.complete = true;
  op.header_done = wire::kFrameHeaderBytes;
  if (!accepts(op, held->tag, held->size)) {
    op.error = message(op, mismatch(op, held->tag, held->size));
    return true;
  }
  if (op.size > 0) std::memcpy(op.data, held->data, op.size);
  op.payload_done = op.size;
  return true;
}

// A held message read to its end goes to the first queued receive of its stream, if one was
// posted meanwhile; else it waits in held_.
void Channel::deliver_held_locked(std::unique_ptr<Op> held) {
  Op* prev = nullptr;
  Op* q = head_;
  while (q != nullptr && q->stream != held->stream) prev = std::exchange(q, q->next);
  if (q == nullptr) {
    held_[held->stream].push_back(std::move(held));
    return;
  }
  (prev != nullptr ? prev->next : head_) = q->next;
  if (tail_ == q) tail_ = prev;
  held_[held->stream].push_front(std::move(held));
  take_held_locked(*q);
}

// The head's header names another stream: the message belongs to the first queued receive of
// that stream, or to a new held buffer, which becomes the head. Returns it, or nullptr with cause.
Op* Channel::redirect_locked(Op& op, const wire::FrameHeader& header, std::string& cause) {
  if (!failure_.empty()) {
    cause = failure_;
    return nullptr;
  }
  Op* target = nullptr;
  for (Op *prev = &op, *q = op.next; q != nullptr; prev = std::exchange(q, q->next)) {
    if (q->stream != header.stream) continue;
    if (!accepts(*q, header.tag, header.length)) {
      cause = mismatch(*q, header.tag, header.length);
      return nullptr;
    }
    prev->next = q->next;
    if (tail_ == q) tail_ = prev;
    target = q;
    break;
  }
  if (target == nullptr) {
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
    target = arriving_.get();
  }
  // Move what was read past the header into op's buffer; what lies past the message's end
  // is the start of the next one.
  const uint64_t read = op.payload_done, mine = std::min(read, header.length);
  if (mine > 0) std::memcpy(target->data, op.data, mine);
  if (read > mine) carry_over(op.data + mine, read - mine);
  target->header = op.header;
  target->header_done = wire::kFrameHeaderBytes;
  target->payload_done = mine;
  op.header_done = 0;
  op.payload_done = 0;
  target->next = &op;
  head_ = target;
  return target;
}

// Bytes read past a message's end start the next one: they go before whatever carry_ holds.
void Channel::carry_over(const std::byte* bytes, uint64_t n) {
  std::vector<std::byte> rest(bytes, bytes + n);
  rest.insert(rest.end(), carry_.begin() + static_cast<std::ptrdiff_t>(carry_pos_), carry_.end());
  carry_ = std::move(rest);
  carry_pos_ = 0;
}

// Fills iov from carry_ as a recvmsg would from the socket; returns the bytes moved.
uint64_t Channel::take_carry(const iovec* iov, int count) {
  uint64_t moved = 0;
  for (int i = 0; i < count && carry_pos_ < carry_.size(); ++i) {
    const std::size_t n = std::min(iov[i].iov_len, carry_.size() - carry_pos_);
    std::memcpy(iov[i].iov_base, carry_.data() + carry_pos_, n);
    carry_pos_ += n;
    moved += n;
  }
  if (carry_pos_ == carry_.size()) {
    carry_.clear();
    carry_pos_ = 0;
  }
  return moved;
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
// expired with no byte moved), budget bytes moved, or an error. A receive whose header names
// another stream goes on with the message's own receive (or held buffer): op is set to it.
Channel::Step Channel::step(Op*& current, bool blocking, uint64_t budget, std::string& cause) {
  uint64_t moved = 0;
  for (;;) {
    Op& op = *current;
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
    ssize_t n = dir_ == Direction::send      ? ::sendmsg(conn_.fd(), &msg, flags | MSG_NOSIGNAL)
                : carry_pos_ < carry_.size() ? static_cast<ssize_t>(take_carry(iov, count))
                                             : ::recvmsg(conn_.fd(), &msg, flags);
    if (n > 0) {
      auto got = static_cast<uint64_t>(n);
      const bool had_header = op.header_done == wire::kFrameHeaderBytes;
      const uint64_t to_header = std::min<uint64_t>(got, wire::kFrameHeaderBytes - op.header_done);
      op.header_done += to_header;
      op.payload_done += got - to_header;
      touch();
      if (dir_ == Direction::recv && !had_header && op.header_done == wire::kFrameHeaderBytes) {
        wire::FrameHeader header;
        cause = check_header(op, header);
        if (!cause.empty()) return Step::failed;
        if (header.stream != op.stream) {
          std::lock_guard lock(mutex_);
          Op* target = redirect_locked(op, header, cause);
          if (target == nullptr) return Step::failed;
          current = target;
        } else if (!accepts(op, header.tag, header.length)) {
          cause = mismatch(op, header.tag, header.length);
          return Step::failed;
        } else if (op.payload_done > op.size) {
          // A receive of at most `size` bytes read that many, and the message was shorter.
          carry_over(op.data + op.size, op.payload_done - op.size);
          got -= op.payload_done - op.size;
          op.payload_done = op.size;
        }
      }
      moved += got;
      if (moved >= budget && current->payload_done < current->size) return Step::yielded;
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

// The framing: magic and sequence number (the header is counted as read).
std::string Channel::check_header(const Op& op, wire::FrameHeader& header) {
  try {
    header = wire::decode_frame(op.header);
  } catch (const TransportError& e) {
    return fmt::format("{} from rank {} (not a ringgrad stream, or its framing was lost)", e.what(), conn_.peer());
  }
  if (header.seq != frames_read_)
    return fmt::format("message #{} arrived where #{} was expected (the stream lost its framing)", header.seq, frames_read_);
  ++frames_read_;
  return {};
}

bool Channel::accepts(Op& op, uint64_t tag, uint64_t length) {
  if (tag != op.tag || length > op.size || (length < op.size && !op.up_to)) return false;
  op.size = length;  // a receive of at most size bytes takes the message's length
  op.up_to = false;
  return true;
}

std::string Channel::mismatch(const Op& op, uint64_t tag, uint64_t length) const {
  return fmt::format("mismatch: the next message from rank {}{} has {} and {} bytes, this receive expects {} and {}{} "
                     "bytes", conn_.peer(), op.stream == 0 ? "" : fmt::format(" on stream {}", op.stream), describe_tag(tag),
                     length, describe_tag(op.tag), op.up_to ? "at most " : "", op.size);
}

// --- Drivers -----------------------------------------------------------------------------------

void Channel::run(Op& op) {
  {
    std::unique_lock lock(mutex_);
    if (!failure_.empty()) throw TransportError(message(op, failure_));
    if (dir_ == Direction::recv && take_held_locked(op)) {
      if (!op.error.empty()) throw TransportError(op.error);
      return;
    }
    if (!enqueue_locked(op)) {
      lock.unlock();
      return wait(op);  // others are queued ahead: the progress thread drives them and this one
    }
  }
  drive_blocking(op);
  if (!op.error.empty()) throw TransportError(op.error);
}

// A small receive first reads without waiting, for up to the connection's receive_poll: a thread
// that sleeps on the socket is woken when the bytes arrive, and on a virtual machine whose idle
// CPUs halt that wake-up can take longer than the message took to come. Returns what the last
// step returned: done, failed (a closed or failed connection ends the poll at once), or
// would_block with whatever arrived so far moved; op may now point at another stream's
// receive, as after any step.
Channel::Step Channel::poll_small_receive(Op*& op, std::string& cause) {
  if (dir_ != Direction::recv || op->size > kPolledReceiveBytes || conn_.receive_poll().count() == 0) {
    return Step::would_block;
  }
  const auto until = Clock::now() + conn_.receive_poll();
  Step result = Step::would_block;
  do {
    result = step(op, /*blocking=*/false, UINT64_MAX, cause);
  } while (result == Step::would_block && Clock::now() < until);
  return result;
}

// Drives on the caller's thread with blocking system calls until own completes; each call fails
// only after the timeout passes without a byte moved. Messages of other streams that arrive
// first are read on the way. Another thread that fails the connection shuts the socket down,
// which ends a blocked call at once.
void Channel::drive_blocking(Op& own) {
  Op* op = &own;
  for (;;) {
    std::string cause;
    Step result = poll_small_receive(op, cause);
    if (result == Step::would_block) result = step(op, /*blocking=*/true, UINT64_MAX, cause);
    if (result == Step::would_block) cause = timeout_cause();
    if (result != Step::done) conn_.fail(cause);
    std::unique_lock lock(mutex_);
    Op* next = finish_head_locked(*op, result == Step::done);
    if (own.complete) {
      if (next == nullptr) return;
      lock.unlock();
      return hand_to_progress();  // asynchronous operations were queued behind this one
    }
    op = next;  // own is still queued, so next is not null
  }
}

void Channel::start(Op& own) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) {
      own.complete = true;
      own.error = message(own, failure_);
      return;
    }
    if (dir_ == Direction::recv && take_held_locked(own)) return;
    if (!enqueue_locked(own)) return;
  }
  // Idle channel: one attempt on the caller's thread (a small send usually completes here),
  // then the progress thread takes over.
  Op* op = &own;
  std::string cause;
  Step result = step(op, /*blocking=*/false, kProgressBudget, cause);
  if (result == Step::failed) conn_.fail(cause);
  if (result == Step::done || result == Step::failed) {
    std::unique_lock lock(mutex_);
    if (finish_head_locked(*op, result == Step::done) == nullptr) return;
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
    switch (step(op, /*blocking=*/false, kProgressBudget, cause)) {
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
  // A receive of up to size bytes that has not yet seen its message's header says "at most".
  const char* bound = op.up_to ? "at most " : "";
  return fmt::format("ringgrad transport: rank {}: {} {} rank {} ({}, {}{} bytes) failed after {} of {}{} bytes: {}",
                     conn_.local_rank(), send ? "send" : "recv", send ? "to" : "from", conn_.peer(), describe_tag(op.tag),
                     bound, op.size, op.payload_done, bound, op.size, cause);
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
