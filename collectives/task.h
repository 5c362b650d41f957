// Task: one call of a Communicator, as it is queued and run. Built on the caller's thread from the
// public arguments: NCCL's count convention applied, the size the algorithm is chosen by, and
// this rank's validation error recorded (the argument check reports it on every rank; without
// the check it is thrown at once). Internal to the Communicator.
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/buffer.h"
#include "collectives/group.h"
#include "collectives/p2p_op.h"
#include "collectives/work.h"

namespace ringgrad::collectives {

struct Task {
  CollKind kind;
  Algo algo = Algo::kAuto;  // as asked; the Communicator resolves kAuto before it runs
  std::size_t bytes = 0;    // collectives: nccl-tests' size, which the algorithm is chosen by; others: the bytes moved
  CollArgs args{};
  std::size_t elem_bytes = 0;  // collectives: bytes of one element of args.dtype
  int device = kHost;  // where this rank's buffers are
  int peer = -1;       // send/recv only
  std::vector<P2POp> ops;  // batch_send_recv only
  std::vector<std::size_t> send_counts, recv_counts;  // all_to_all_v only: elements per peer
  uint64_t tag = 0;    // send/recv: the caller's tag (collectives are tagged by `seq`)
  uint64_t seq = 0;    // collectives: issue order, the same on every rank; others: the next collective's
  std::string invalid;  // why this rank's arguments are unusable, or empty
  std::shared_ptr<Work::State> state;
};

/// Whether `kind` is matched across all ranks (everything but send, recv and their batches).
inline bool is_collective(CollKind kind) {
  return kind != CollKind::kSend && kind != CollKind::kRecv && kind != CollKind::kBatchSendRecv;
}

/// "all_reduce #3 on rank 1 of group tp (...)": how errors name the call and this rank.
std::string where(const Task& task, const Group& group);

/// A collective's Task on rank `rank` of `world_size`.
Task collective_task(CollKind kind, ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo, int rank,
                     int world_size);

/// A send's (data in `send`) or a recv's (into `recv`) Task with `peer` and the caller's `tag`.
Task point_to_point_task(CollKind kind, ConstBuffer send, Buffer recv, int peer, uint64_t tag, int rank, int world_size);

/// An all_to_all_v's Task: its counts copied (the caller's spans may go once it returns).
Task all_to_all_v_task(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                       std::span<const std::size_t> recv_counts, int rank, int world_size);

/// A batch of sends and receives with the caller's `tag`; every op must be on one device.
Task batch_task(std::vector<P2POp> ops, uint64_t tag, int rank, int world_size);

}  // namespace ringgrad::collectives
