// Building a Task from a public call: which buffer gives count and dtype, where the buffers
// live, the size that chooses the algorithm, and what is wrong with this rank's arguments.
#include "collectives/task.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collectives/device_check.h"
#include "collectives/enum_format.h"
#include "collectives/validate.h"

namespace ringgrad::collectives {

std::string where(const Task& task, const Group& group) {
  if (!is_collective(task.kind)) return fmt::format("{} on {}", task.kind, describe_rank(group));
  return fmt::format("{} #{} on {}", task.kind, task.seq, describe_rank(group));
}

Task collective_task(CollKind kind, ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo, int rank,
                     int world_size) {
  Task t{};
  t.kind = kind;
  const int p = world_size;
  const std::size_t P = static_cast<std::size_t>(p);
  // NCCL's count: a non-root's send may be empty in broadcast and scatter, and reduce_scatter's
  // count is its output's, so these three take count and dtype from recv.
  const bool count_from_recv = kind == CollKind::kBroadcast || kind == CollKind::kReduceScatter || kind == CollKind::kScatter;
  const DType dtype = count_from_recv ? recv.dtype : send.dtype;
  std::size_t count = count_from_recv ? recv.count : send.count;
  if (kind == CollKind::kAllToAll) count /= P;  // elements per peer
  t.args = CollArgs{static_cast<const std::byte*>(send.data), static_cast<std::byte*>(recv.data), count, dtype, op, root};
  t.device = uses_recv(kind, rank, root) ? recv.device : send.device;  // where this rank's buffers live
  t.elem_bytes = dtype_size(dtype);
  t.invalid = validate(kind, send, recv, root, rank, p, t.elem_bytes);
  if (algo != Algo::kAuto && !has_algo(kind, algo) && kind != CollKind::kBarrier) {
    std::vector<std::string_view> has;
    for (Algo a : kAllAlgos)
      if (has_algo(kind, a)) has.push_back(algo_name(a));
    t.invalid = fmt::format("{} has no '{}' algorithm (it has: {})", kind, algo, fmt::join(has, ", "));
  }
  // nccl-tests' size: the whole buffer, all p blocks where the count is per rank.
  const bool per_rank = kind == CollKind::kAllGather || kind == CollKind::kReduceScatter || kind == CollKind::kGather ||
                        kind == CollKind::kScatter || kind == CollKind::kAllToAll;
  t.bytes = count * t.elem_bytes * (per_rank ? P : 1);
  t.algo = algo;
  return t;
}

namespace {

// The top two tag bits are the check's and send/recv's tag spaces (check.h: kCheckTag;
// call_runner.cc: kP2PTagBit).
uint64_t user_tag(uint64_t tag) { return tag & ~(uint64_t{3} << 62); }

// Why `op` cannot run on rank `rank` of a world of `world_size`, or empty.
std::string check_op(const P2POp& op, int rank, int world_size) {
  if (op.peer < 0 || op.peer >= world_size || op.peer == rank)
    return fmt::format("peer {} is not another rank of this world of {}", op.peer, world_size);
  if (op.buffer.stride != 1)
    return fmt::format("buffer is not contiguous (stride {} elements); make a contiguous copy first", op.buffer.stride);
  return check_memory(op.is_send ? "send" : "recv", op.buffer.data, op.buffer.count, op.buffer.device);
}

}  // namespace

Task point_to_point_task(CollKind kind, ConstBuffer send, Buffer recv, int peer, uint64_t tag, int rank, int world_size) {
  const P2POp op = kind == CollKind::kSend ? P2POp::send(send, peer) : P2POp::recv(recv, peer);
  Task t{};
  t.kind = kind;
  t.args = CollArgs{static_cast<const std::byte*>(send.data), static_cast<std::byte*>(recv.data), op.buffer.count,
                    op.buffer.dtype, ReduceOp::SUM, -1};
  t.peer = peer;
  t.tag = user_tag(tag);
  t.device = op.buffer.device;
  t.bytes = op.buffer.count * dtype_size(op.buffer.dtype);
  t.invalid = check_op(op, rank, world_size);
  return t;
}

Task all_to_all_v_task(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                       std::span<const std::size_t> recv_counts, int rank, int world_size) {
  Task t{};
  t.kind = CollKind::kAllToAllV;
  t.algo = Algo::kPairwise;
  t.args = CollArgs{static_cast<const std::byte*>(send.data), static_cast<std::byte*>(recv.data), 0, send.dtype,
                    ReduceOp::SUM, -1};
  t.send_counts.assign(send_counts.begin(), send_counts.end());
  t.recv_counts.assign(recv_counts.begin(), recv_counts.end());
  t.device = send.device;
  t.elem_bytes = dtype_size(send.dtype);
  t.bytes = send.count * t.elem_bytes;
  const auto P = static_cast<std::size_t>(world_size), R = static_cast<std::size_t>(rank);
  std::size_t send_total = 0, recv_total = 0;
  for (std::size_t c : t.send_counts) send_total += c;
  for (std::size_t c : t.recv_counts) recv_total += c;
  if (t.send_counts.size() != P || t.recv_counts.size() != P)
    t.invalid = fmt::format("{} send counts and {} recv counts, one per rank of this world of {} expected",
                            t.send_counts.size(), t.recv_counts.size(), world_size);
  else if (send_total != send.count || recv_total != recv.count)
    t.invalid = fmt::format("send holds {} elements and recv {}, but the counts add up to {} and {}", send.count,
                            recv.count, send_total, recv_total);
  else if (t.send_counts[R] != t.recv_counts[R])
    t.invalid = fmt::format("this rank sends itself {} elements but expects {} from itself", t.send_counts[R],
                            t.recv_counts[R]);
  else if (send.device != kHost || recv.device != kHost)
    t.invalid = "all_to_all_v takes host buffers (device buffers: not yet)";
  else if (send.dtype != recv.dtype)
    t.invalid = fmt::format("send is {} but recv is {}", send.dtype, recv.dtype);
  else if (send.stride != 1 || recv.stride != 1)
    t.invalid = "a buffer is not contiguous (stride other than 1); make a contiguous copy first";
  else if (const auto s = reinterpret_cast<std::uintptr_t>(send.data), r = reinterpret_cast<std::uintptr_t>(recv.data);
           send_total > 0 && recv_total > 0 && s < r + recv_total * dtype_size(recv.dtype) && r < s + send_total * dtype_size(send.dtype))
    t.invalid = "send and recv overlap: all_to_all_v is out of place only";
  return t;
}

Task batch_task(std::vector<P2POp> ops, uint64_t tag, int rank, int world_size) {
  Task t{};
  t.kind = CollKind::kBatchSendRecv;
  t.tag = user_tag(tag);
  t.device = ops.empty() ? kHost : ops.front().buffer.device;
  for (std::size_t i = 0; i < ops.size() && t.invalid.empty(); ++i) {
    const P2POp& op = ops[i];
    std::string why = check_op(op, rank, world_size);
    if (why.empty() && op.buffer.device != t.device)
      why = fmt::format("it is in {} but op 0 is in {}: one batch, one kind of memory", memory_name(op.buffer.device),
                        memory_name(t.device));
    if (!why.empty()) t.invalid = fmt::format("op {} ({} rank {}): {}", i, op.is_send ? "send to" : "recv from", op.peer, why);
    t.bytes += op.buffer.count * dtype_size(op.buffer.dtype);
  }
  t.ops = std::move(ops);
  return t;
}

}  // namespace ringgrad::collectives
