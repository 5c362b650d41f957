// SimLink: each Link call as messages on the simulated network and time on the rank's clock.
#include "collectives/sim/sim_link.h"

#include <cstring>

#include <fmt/format.h>

#include "collectives/reduce/reduce_kernel.h"
#include "transport/error.h"

namespace ringgrad::collectives::sim {

SimLink::SimLink(World& world, int rank)
    : Link(rank, world.size(), world.options().chunk_bytes),
      world_(world),
      network_(world.network()),
      payload_(world.options().payload) {}

double SimLink::clock() const { return world_.engine().clock(rank()); }

void SimLink::spend(double seconds) { world_.engine().clock(rank()) += seconds; }

void SimLink::observe(const char* name, double t0, int peer, std::size_t bytes) {
  if (world_.options().observer) world_.options().observer(SimSpan{rank(), name, t0, clock(), peer, bytes});
}

std::shared_ptr<Message> SimLink::post_send(int to, const void* data, std::size_t bytes) {
  if (to < 0 || bytes == 0) return nullptr;  // as the real links: no message at all
  return network_.send(rank(), to, payload_ ? data : nullptr, bytes);
}

void SimLink::take(Message& m, void* into, std::size_t bytes) {
  network_.wait(rank(), m);
  if (m.bytes != bytes)
    throw transport::TransportError(
        fmt::format("rank {}: a receive of {} bytes from rank {} met a message of {} bytes "
                    "(the ranks disagree on the collective)",
                    rank(), bytes, m.src, m.bytes));
  if (payload_ && into) std::memcpy(into, m.payload.data(), bytes);
}

void SimLink::send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv, std::size_t recv_bytes) {
  const double t0 = clock();
  const auto out = post_send(to, send, send_bytes);
  if (from >= 0 && recv_bytes > 0) take(*network_.post_receive(rank(), from), recv, recv_bytes);
  if (out) network_.wait(rank(), *out);
  observe("send_recv", t0, from >= 0 ? from : to, send_bytes + recv_bytes);
}

void SimLink::send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst, const void* a,
                               std::size_t count, DType dtype, ReduceOp op) {
  const double t0 = clock();
  const auto out = post_send(to, send, send_bytes);
  const std::size_t bytes = count * dtype_size(dtype);
  if (from >= 0 && bytes > 0) {
    const auto in = network_.post_receive(rank(), from);
    take(*in, nullptr, bytes);
    if (payload_) combine(dst, a, in->payload.data(), count, dtype, op);
    spend(static_cast<double>(bytes) * world_.topology().gamma);
  }
  if (out) network_.wait(rank(), *out);
  observe("send_recv_reduce", t0, from >= 0 ? from : to, send_bytes + bytes);
}

void SimLink::send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                               std::span<std::byte> their_head, const BodyDestination& body_for) {
  // Head and body as one message; a body's bytes travel in payload mode only (a head always:
  // the receiver reads it to learn the body's length).
  const double t0 = clock();
  std::vector<std::byte> framed(head.begin(), head.end());
  if (payload_) framed.insert(framed.end(), body.begin(), body.end());
  std::shared_ptr<Message> out;
  if (to >= 0) {
    out = network_.send(rank(), to, nullptr, head.size() + body.size());
    out->payload = std::move(framed);  // read by the receiver only once delivered
  }
  if (from >= 0) {
    const auto in = network_.post_receive(rank(), from);
    network_.wait(rank(), *in);
    if (in->payload.size() < their_head.size())
      throw transport::TransportError(fmt::format("rank {}: rank {} sent a head of {} bytes, expected {}", rank(), from,
                                                  in->payload.size(), their_head.size()));
    std::memcpy(their_head.data(), in->payload.data(), their_head.size());
    const std::span<std::byte> their_body = body_for(their_head);
    if (in->bytes != their_head.size() + their_body.size())
      throw transport::TransportError(fmt::format("rank {}: rank {} sent {} bytes behind its head, which says {}", rank(), from,
                                                  in->bytes - their_head.size(), their_body.size()));
    if (payload_ && !their_body.empty())
      std::memcpy(their_body.data(), in->payload.data() + their_head.size(), their_body.size());
  }
  if (out) network_.wait(rank(), *out);
  observe("send_recv_framed", t0, from >= 0 ? from : to, head.size() + body.size());
}

void SimLink::isend(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) {
  const auto out = post_send(to, data, bytes);
  if (!out) return;
  pending.emplace_back(std::function<void()>([this, out] {
    const double t0 = clock();
    network_.wait(rank(), *out);
    observe("wait send", t0, out->dst, out->bytes);
  }));
}

void SimLink::irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) {
  if (from < 0 || bytes == 0) return;
  const auto in = network_.post_receive(rank(), from);  // matched in the order posted
  pending.emplace_back(std::function<void()>([this, in, data, bytes] {
    const double t0 = clock();
    take(*in, data, bytes);
    observe("wait recv", t0, in->src, bytes);
  }));
}

void SimLink::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst == src || bytes == 0) return;
  const double t0 = clock();
  if (payload_) std::memcpy(dst, src, bytes);
  spend(static_cast<double>(bytes) * world_.topology().copy_beta);
  observe("copy", t0, -1, bytes);
}

void SimLink::reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) {
  const double t0 = clock();
  if (payload_) combine(dst, a, b, count, dtype, op);
  spend(static_cast<double>(count * dtype_size(dtype)) * world_.topology().gamma);
  observe("reduce", t0, -1, count * dtype_size(dtype));
}

void SimLink::divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) {
  if (op != ReduceOp::AVG || count == 0) return;
  const double t0 = clock();
  if (payload_) collectives::divide_for_avg(data, count, dtype, op, world_size);
  spend(static_cast<double>(count * dtype_size(dtype)) * world_.topology().gamma);
  observe("divide", t0, -1, count * dtype_size(dtype));
}

std::byte* SimLink::workspace(std::size_t bytes) {
  if (!payload_) return world_.unbacked(bytes);
  if (workspace_.size() < bytes) workspace_.resize(bytes);
  return workspace_.data();
}

void SimLink::compute(double seconds, const char* name) {
  const double t0 = clock();
  spend(seconds);
  observe(name, t0, -1, 0);
}

}  // namespace ringgrad::collectives::sim
