// simulate(): one collective on every rank of a World, each rank running the algorithm file that
// the real Communicator runs (run_collective in algorithms/dispatch.cc) on its SimLink, from
// virtual time 0. In payload mode rank r's input is the serial reference's (reference.h) and its
// output is compared with the reference's, element by element, as the *_perf tools count #wrong.
#pragma once

#include <cstddef>

#include "collectives/algo.h"
#include "collectives/dtype.h"
#include "collectives/sim/world.h"

namespace ringgrad::collectives::sim {

/// One call. `count` is NCCL's (algorithms.h, CollArgs), and for the kinds run_collective
/// leaves to others: batch_send_recv is the ring exchange of sendrecv_perf (count elements to
/// rank r+1 while receiving from r-1); all_to_all_v sends ((7 r + 3 q) mod 4) * count elements
/// from rank r to rank q; send and recv pair rank 2i (sending) with 2i+1.
struct Call {
  CollKind kind = CollKind::kAllReduce;
  Algo algo = Algo::kRing;
  std::size_t count = 0;
  DType dtype = DType::kFloat32;
  ReduceOp op = ReduceOp::SUM;
  int root = 0;
  bool in_place = false;
};

struct CallResult {
  double seconds = 0;  // virtual time at which the slowest rank finished
  long wrong = -1;     // payload mode: elements that differ from the reference on all ranks; else -1
};

/// Runs `call` on `world`. Throws std::invalid_argument for an algorithm the collective does not
/// have (algo.h: has_algo), and what the ranks throw (world.h).
CallResult simulate(World& world, const Call& call);

/// Elements rank `from` sends rank `to` in simulate()'s all_to_all_v.
inline std::size_t all_to_all_v_count(int from, int to, std::size_t count) {
  return static_cast<std::size_t>((7 * from + 3 * to) % 4) * count;
}

}  // namespace ringgrad::collectives::sim
