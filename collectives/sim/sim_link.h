// SimLink: the Link (links/link.h) of one simulated rank. Transfers go through the World's
// network (network.h) in virtual time; local work moves the rank's clock by the topology's
// figures: a copy of m bytes by m * copy_beta, a reduction of m bytes by m * gamma (after the
// message it reduces has arrived, as the cost model counts it). In payload mode the bytes move
// too (memcpy, the CPU reduction kernels); in sizes-only mode nothing is touched.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/links/link.h"
#include "collectives/sim/world.h"

namespace ringgrad::collectives::sim {

class SimLink final : public Link {
 public:
  SimLink(World& world, int rank);

  void send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv, std::size_t recv_bytes) override;
  void send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst, const void* a, std::size_t count,
                        DType dtype, ReduceOp op) override;
  void send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                        std::span<std::byte> their_head, const BodyDestination& body_for) override;
  void isend(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) override;
  void irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) override;
  void divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) override;
  std::byte* workspace(std::size_t bytes) override;

  /// This rank's virtual time, seconds.
  double clock() const;
  /// Work that takes `seconds` on this rank and moves no bytes (a training step's forward and
  /// backward): the clock moves on; the trace shows a span named `name`.
  void compute(double seconds, const char* name);

 private:
  std::shared_ptr<Message> post_send(int to, const void* data, std::size_t bytes);
  // Waits for m, checks its size against what the algorithm expects, and copies its bytes to
  // `into` (payload mode, when into is not null).
  void take(Message& m, void* into, std::size_t bytes);
  void spend(double seconds);
  void observe(const char* name, double t0, int peer, std::size_t bytes);

  World& world_;
  Network& network_;
  bool payload_;
  std::vector<std::byte> workspace_;
};

}  // namespace ringgrad::collectives::sim
