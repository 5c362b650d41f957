// Building a Task from a public call: which buffer gives count and dtype, where the buffers
// live, the size that chooses the algorithm, and what is wrong with this rank's arguments.
#include "collectives/task.h"

#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collectives/check.h"
#include "collectives/device_check.h"

namespace ringgrad::collectives {

Task collective_task(CollKind kind, ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo, int rank,
                     int world_size) {
  Task t{};
  t.kind = kind;
  const int p = world_size;
  const std::size_t P = static_cast<std::size_t>(p);
  // NCCL's count: the root's send is empty in broadcast and scatter, so theirs comes from recv.
  const bool count_from_recv = kind == CollKind::kBroadcast || kind == CollKind::kReduceScatter || kind == CollKind::kScatter;
  const DType dtype = count_from_recv ? recv.dtype : send.dtype;
  std::size_t count = count_from_recv ? recv.count : send.count;
  if (kind == CollKind::kAllToAll) count /= P;  // elements per peer
  t.args = CollArgs{static_cast<const std::byte*>(send.data), static_cast<std::byte*>(recv.data), count, dtype, op, root};
  t.invalid = validate(kind, send, recv, root, rank, p);
  t.device = call_device(kind, send, recv, root, rank);
  if (algo != Algo::kAuto && !has_algo(kind, algo) && kind != CollKind::kBarrier) {
    std::vector<std::string_view> has;
    for (Algo a : kAllAlgos)
      if (has_algo(kind, a)) has.push_back(algo_name(a));
    t.invalid = fmt::format("{} has no '{}' algorithm (it has: {})", coll_name(kind), algo_name(algo), fmt::join(has, ", "));
  }
  // nccl-tests' size: the whole buffer, all p blocks where the count is per rank.
  const bool per_rank = kind == CollKind::kAllGather || kind == CollKind::kReduceScatter || kind == CollKind::kGather ||
                        kind == CollKind::kScatter || kind == CollKind::kAllToAll;
  t.bytes = count * dtype_size(dtype) * (per_rank ? P : 1);
  t.algo = algo;
  return t;
}

Task point_to_point_task(CollKind kind, ConstBuffer send, Buffer recv, int peer, uint64_t tag, int rank, int world_size) {
  Task t{};
  t.kind = kind;
  const bool is_send = kind == CollKind::kSend;
  t.args = CollArgs{static_cast<const std::byte*>(send.data), static_cast<std::byte*>(recv.data),
                    is_send ? send.count : recv.count, is_send ? send.dtype : recv.dtype, ReduceOp::SUM, -1};
  t.peer = peer;
  t.tag = tag & ~(uint64_t{3} << 62);  // the top two bits are the check's and send/recv's tag spaces
  t.device = is_send ? send.device : recv.device;
  if (peer < 0 || peer >= world_size || peer == rank)
    t.invalid = fmt::format("peer {} is not another rank of this world of {}", peer, world_size);
  else if (auto stride = is_send ? send.stride : recv.stride; stride != 1)
    t.invalid = fmt::format("buffer is not contiguous (stride {} elements); make a contiguous copy first", stride);
  else
    t.invalid = is_send ? check_memory("send", send.data, send.count, send.device)
                        : check_memory("recv", recv.data, recv.count, recv.device);
  return t;
}

}  // namespace ringgrad::collectives
