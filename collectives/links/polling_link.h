// PollingLink: the Links whose transfers are driven by one polling loop per send_recv (ShmLink,
// PlainShmLink, DeviceLink), so two ranks sending to each other at once never wait on each other. Each
// send_recv becomes two halves, an Outgoing and an Incoming, that the link's exchange()
// advances piece by piece until both are done. isend runs at once; irecv runs when waited for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collectives/links/link.h"

namespace ringgrad::collectives {

/// Base is Link or one of its memory-specific bases (HostMemoryLink).
template <class Base>
class PollingLink : public Base {
 public:
  void send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                 std::size_t recv_bytes) final {
    exchange(Outgoing::of(to, send, send_bytes), Incoming::copy(from, recv, recv_bytes));
  }
  void send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst, const void* a,
                        std::size_t count, DType dtype, ReduceOp op) final {
    exchange(Outgoing::of(to, send, send_bytes), Incoming::reduce(from, dst, a, count, dtype, op));
  }
  /// Head and body go into the peer's inbox first (two pieces; a shared-memory inbox holds
  /// four), then this rank takes the peer's: one exchange's wait, run on this thread. The
  /// argument check calls it on host links only. ShmLink overrides it (a small pair as one
  /// piece); PlainShmLink, one slot a peer, exchanges the heads, then the bodies.
  void send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                        std::span<std::byte> their_head, const typename Base::BodyDestination& body_for) override {
    this->send(to, head.data(), head.size());
    this->send(to, body.data(), body.size());
    if (from < 0) return;
    this->recv(from, their_head.data(), their_head.size());
    const std::span<std::byte> their_body = body_for(their_head);
    this->recv(from, their_body.data(), their_body.size());
  }
  /// Runs the send now: it returns once every piece is in the peer's inbox (or on the wire).
  void isend(int to, const void* data, std::size_t bytes, std::vector<Pending>&) final { this->send(to, data, bytes); }
  /// One blocking recv per piece, run by its Pending's wait (pieces from one peer are waited
  /// for in order, so they are taken in order).
  void irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) final {
    if (from < 0) return;
    auto* p = static_cast<std::byte*>(data);
    for (std::size_t off = 0; off < bytes; off += this->chunk_bytes()) {
      const std::size_t n = std::min(this->chunk_bytes(), bytes - off);
      pending.emplace_back(std::function<void()>([this, from, p, off, n] { this->recv(from, p + off, n); }));
    }
  }

 protected:
  using Base::Base;

  // Peer -1 means no transfer (0 bytes); `done` counts the bytes moved so far.
  struct Outgoing {
    int to;
    const std::byte* src;
    std::size_t bytes, done;
    static Outgoing of(int to, const void* data, std::size_t bytes) {
      return {to, static_cast<const std::byte*>(data), to < 0 ? 0 : bytes, 0};
    }
  };
  struct Incoming {
    int from;
    std::byte* dst;
    const std::byte* a;  // nullptr: copy; else dst = a op received
    std::size_t bytes, done;
    DType dtype;
    ReduceOp op;
    static Incoming copy(int from, void* dst, std::size_t bytes) {
      return {from, static_cast<std::byte*>(dst), nullptr, from < 0 ? 0 : bytes, 0, DType::kUInt8, ReduceOp::SUM};
    }
    static Incoming reduce(int from, void* dst, const void* a, std::size_t count, DType dtype, ReduceOp op) {
      return {from, static_cast<std::byte*>(dst), static_cast<const std::byte*>(a), from < 0 ? 0 : count * dtype_size(dtype),
              0, dtype, op};
    }
  };

  /// Advances both halves until both are done; throws transport::TransportError on a dead or
  /// silent peer.
  virtual void exchange(Outgoing out, Incoming in) = 0;

  /// What is left of an exchange, in words, for its errors: "sending 0 of 8 bytes to rank 1,
  /// receiving 0 of 8 bytes from rank 2".
  static std::string waiting_for(const Outgoing& out, const Incoming& in) {
    std::string s;
    if (out.done < out.bytes) s = fmt::format("sending {} of {} bytes to rank {}", out.done, out.bytes, out.to);
    if (in.done < in.bytes)
      s += fmt::format("{}receiving {} of {} bytes from rank {}", s.empty() ? "" : ", ", in.done, in.bytes, in.from);
    return s;
  }
};

}  // namespace ringgrad::collectives
