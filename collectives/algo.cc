// Names of collectives, algorithms and backends, and which collective has which algorithm.
#include "collectives/algo.h"

#include <stdexcept>

#include <fmt/format.h>

namespace ringgrad::collectives {

std::string_view coll_name(CollKind kind) {
  switch (kind) {
    case CollKind::kBroadcast: return "broadcast";
    case CollKind::kReduce: return "reduce";
    case CollKind::kAllReduce: return "all_reduce";
    case CollKind::kAllGather: return "all_gather";
    case CollKind::kReduceScatter: return "reduce_scatter";
    case CollKind::kBarrier: return "barrier";
    case CollKind::kSend: return "send";
    case CollKind::kRecv: return "recv";
    case CollKind::kGather: return "gather";
    case CollKind::kScatter: return "scatter";
    case CollKind::kAllToAll: return "all_to_all";
    case CollKind::kBatchSendRecv: return "batch_send_recv";
    case CollKind::kAllToAllV: return "all_to_all_v";
  }
  return "?";
}

std::string_view algo_name(Algo algo) {
  switch (algo) {
    case Algo::kAuto: return "auto";
    case Algo::kRing: return "ring";
    case Algo::kTree: return "tree";
    case Algo::kHalvingDoubling: return "hd";
    case Algo::kLinear: return "linear";
    case Algo::kPairwise: return "pairwise";
    case Algo::kBruck: return "bruck";
    case Algo::kHierarchical: return "hier";
    case Algo::kOneShot: return "oneshot";
  }
  return "?";
}

Algo parse_algo(std::string_view name) {
  for (Algo a : kAllAlgos)
    if (name == algo_name(a)) return a;
  if (name == "halving_doubling") return Algo::kHalvingDoubling;
  if (name == "hierarchical") return Algo::kHierarchical;
  if (name == "one_shot") return Algo::kOneShot;
  throw std::invalid_argument(
      fmt::format("unknown algorithm '{}': expected ring, tree, hd, hier, oneshot, linear, pairwise, bruck or auto", name));
}

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::kRinggrad: return "ringgrad";
    case Backend::kNccl: return "nccl";
    case Backend::kMpi: return "mpi";
  }
  return "?";
}

Backend parse_backend(std::string_view name) {
  for (Backend b : {Backend::kRinggrad, Backend::kNccl, Backend::kMpi})
    if (name == backend_name(b)) return b;
  throw std::invalid_argument(fmt::format("unknown backend '{}': expected ringgrad, nccl or mpi", name));
}

bool has_algo(CollKind kind, Algo algo) {
  switch (kind) {
    case CollKind::kAllReduce:
      return algo == Algo::kRing || algo == Algo::kTree || algo == Algo::kHalvingDoubling || algo == Algo::kHierarchical ||
             algo == Algo::kOneShot;
    case CollKind::kBroadcast:
    case CollKind::kReduce: return algo == Algo::kRing || algo == Algo::kTree;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter: return algo == Algo::kRing;
    case CollKind::kGather:
    case CollKind::kScatter: return algo == Algo::kLinear;
    case CollKind::kAllToAll: return algo == Algo::kPairwise || algo == Algo::kBruck;
    case CollKind::kAllToAllV: return algo == Algo::kPairwise;
    default: return false;
  }
}

}  // namespace ringgrad::collectives
