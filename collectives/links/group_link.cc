// GroupLink: each call is the base link's, with group ranks turned into its ranks.
#include "collectives/links/group_link.h"

#include <algorithm>
#include <utility>

namespace ringgrad::collectives {
namespace {

int position_of(const std::vector<int>& members, int rank) {
  return static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
}

}  // namespace

GroupLink::GroupLink(Link& base, std::vector<int> members)
    : Link(position_of(members, base.rank()), static_cast<int>(members.size()), base.chunk_bytes()),
      base_(base),
      members_(std::move(members)) {}

void GroupLink::send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                          std::size_t recv_bytes) {
  base_.send_recv(base_rank(to), send, send_bytes, base_rank(from), recv, recv_bytes);
}

void GroupLink::send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst, const void* a,
                                 std::size_t count, DType dtype, ReduceOp op) {
  base_.send_recv_reduce(base_rank(to), send, send_bytes, base_rank(from), dst, a, count, dtype, op);
}

void GroupLink::isend(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) {
  base_.isend(base_rank(to), data, bytes, pending);
}

void GroupLink::irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) {
  base_.irecv(base_rank(from), data, bytes, pending);
}

}  // namespace ringgrad::collectives
