// OpQueue: a channel's operations in issue order, linked through Op::next, so queueing one
// allocates nothing. The head is the operation being driven. Not thread-safe: the channel's
// mutex guards it.
#pragma once

#include <cstdint>

#include "transport/op.h"

namespace ringgrad::transport::detail {

class OpQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  Op* head() const { return head_; }

  void push_back(Op& op) {
    op.next = nullptr;
    (tail_ != nullptr ? tail_->next : head_) = &op;
    tail_ = &op;
  }

  /// Puts op in front of the head: it is driven next.
  void push_front(Op& op) {
    op.next = head_;
    head_ = &op;
    if (tail_ == nullptr) tail_ = &op;
  }

  /// Removes the head; returns the new head, nullptr when the queue is now empty.
  Op* pop_front() {
    head_ = head_->next;
    if (head_ == nullptr) tail_ = nullptr;
    return head_;
  }

  /// Removes everything behind the head and returns the first of it (still linked through next).
  Op* take_behind_head() {
    Op* rest = head_->next;
    head_->next = nullptr;
    tail_ = head_;
    return rest;
  }

  /// The first queued operation of `stream`, or nullptr.
  Op* first_of_stream(uint32_t stream) const {
    Op* op = head_;
    while (op != nullptr && op->stream != stream) op = op->next;
    return op;
  }

  /// Removes op, which is queued.
  void remove(Op& op) {
    Op* prev = nullptr;
    for (Op* q = head_; q != &op; q = q->next) prev = q;
    (prev != nullptr ? prev->next : head_) = op.next;
    if (tail_ == &op) tail_ = prev;
  }

 private:
  Op* head_ = nullptr;
  Op* tail_ = nullptr;
};

}  // namespace ringgrad::transport::detail
