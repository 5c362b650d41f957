// GroupLink: a Link over a subset of the ranks, so an algorithm written for ranks 0..p-1 runs
// unchanged among, say, the ranks of one host. Group rank i is the i-th rank of `members`;
// every peer is translated to its rank in the underlying link, which moves the bytes.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/links/link.h"

namespace ringgrad::collectives {

class GroupLink final : public Link {
 public:
  /// `members`: ranks of `base`, ascending or not, holding base.rank(); `base` must outlive this.
  GroupLink(Link& base, std::vector<int> members);

  void send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                 std::size_t recv_bytes) override;
  void send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst, const void* a,
                        std::size_t count, DType dtype, ReduceOp op) override;
  void send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                        std::span<std::byte> their_head, const BodyDestination& body_for) override {
    base_.send_recv_framed(base_rank(to), head, body, base_rank(from), their_head, body_for);
  }
  std::size_t eager_bytes() const override { return base_.eager_bytes(); }
  void isend(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) override;
  void irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) override;
  void copy(void* dst, const void* src, std::size_t bytes) override { base_.copy(dst, src, bytes); }
  void reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) override {
    base_.reduce(dst, a, b, count, dtype, op);
  }
  void divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) override {
    base_.divide_for_avg(data, count, dtype, op, world_size);
  }
  std::byte* workspace(std::size_t bytes) override { return base_.workspace(bytes); }

 private:
  int base_rank(int group_rank) const { return group_rank < 0 ? -1 : members_[static_cast<std::size_t>(group_rank)]; }

  Link& base_;
  std::vector<int> members_;
};

}  // namespace ringgrad::collectives
