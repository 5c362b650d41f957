// Names of the collectives, of the algorithms a caller (or RINGGRAD_ALGO) can ask for, and of
// the backends that run collectives on device buffers (RINGGRAD_BACKEND).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringgrad::collectives {

/// The operations of a Communicator.
enum class CollKind : uint8_t {
  kBroadcast, kReduce, kAllReduce, kAllGather, kReduceScatter, kBarrier, kSend, kRecv,
  kGather, kScatter, kAllToAll, kBatchSendRecv, kAllToAllV,
};
/// How many kinds there are (tables indexed by CollKind).
inline constexpr std::size_t kCollKinds = static_cast<std::size_t>(CollKind::kAllToAllV) + 1;

/// Algorithm of a collective. kAuto picks the cheapest under the CostModel. kRing for
/// broadcast/reduce means the pipelined chain; kLinear: the root talks to every rank directly;
/// kPairwise and kBruck are all_to_all's; kHierarchical: inside hosts, then across; kOneShot:
/// every rank sends its vector to every other and reduces them all. Which collective has which: has_algo().
enum class Algo : uint8_t { kAuto, kRing, kTree, kHalvingDoubling, kLinear, kPairwise, kBruck, kHierarchical, kOneShot };

/// Whether a collective of `kind` takes a ReduceOp (reduce, all_reduce, reduce_scatter).
constexpr bool has_op(CollKind kind) {
  return kind == CollKind::kReduce || kind == CollKind::kAllReduce || kind == CollKind::kReduceScatter;
}
/// Whether a collective of `kind` has a root (broadcast, reduce, gather, scatter).
constexpr bool has_root(CollKind kind) {
  return kind == CollKind::kBroadcast || kind == CollKind::kReduce || kind == CollKind::kGather || kind == CollKind::kScatter;
}
/// Which buffers rank `rank` of a collective uses: the root alone sends in broadcast and
/// scatter, and alone receives in reduce and gather.
constexpr bool uses_send(CollKind kind, int rank, int root) {
  return (kind != CollKind::kBroadcast && kind != CollKind::kScatter) || rank == root;
}
constexpr bool uses_recv(CollKind kind, int rank, int root) {
  return (kind != CollKind::kReduce && kind != CollKind::kGather) || rank == root;
}

/// "broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "barrier", "send", "recv",
/// "gather", "scatter", "all_to_all", "batch_send_recv", "all_to_all_v".
std::string_view coll_name(CollKind kind);
/// Every algorithm, kAuto first. CostModel::choose keeps the first of equal predictions: ring
/// before all, and one-shot before halving-doubling. On 2 ranks the two cost the same, but a
/// small one-shot all-reduce can ride in the argument check's message.
inline constexpr Algo kAllAlgos[] = {Algo::kAuto,   Algo::kRing,     Algo::kOneShot, Algo::kTree,        Algo::kHalvingDoubling,
                                     Algo::kLinear, Algo::kPairwise, Algo::kBruck,   Algo::kHierarchical};

/// "auto", "ring", "tree", "hd", "linear", "pairwise", "bruck", "hier", "oneshot".
std::string_view algo_name(Algo algo);
/// Parses the names above (also "halving_doubling"); throws std::invalid_argument otherwise.
Algo parse_algo(std::string_view name);

/// Who runs the calls: ringgrad's own algorithms throughout (over TCP or shared memory, and
/// CUDA IPC or host staging for device buffers); NCCL for device buffers; or MPI for host
/// buffers (under mpirun). The buffers the other library does not take stay ringgrad's.
enum class Backend : uint8_t { kRinggrad, kNccl, kMpi };

/// "ringgrad", "nccl", "mpi".
std::string_view backend_name(Backend backend);
/// Parses the names above; throws std::invalid_argument otherwise.
Backend parse_backend(std::string_view name);

/// Whether `kind` has an implementation for `algo`: all_reduce ring/tree/hd/hier/oneshot; broadcast and
/// reduce ring (chain)/tree; all_gather and reduce_scatter ring; gather and scatter linear;
/// all_to_all pairwise/bruck; all_to_all_v pairwise; barrier, send, recv none.
bool has_algo(CollKind kind, Algo algo);

}  // namespace ringgrad::collectives
