// The one driver behind all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf,
// reduce_perf and gloo_all_reduce_perf: nccl-tests' flags, sweep, columns and footer. Each
// program only names its collective and the contenders (algorithms) it times.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collectives/communicator.h"

namespace ringgrad::bench {

/// The buffers of one row, laid out for the collective: `count` is nccl-tests' count (all_gather:
/// the output's elements, reduce_scatter: the input's); in place as NCCL defines it.
struct OpSetup {
  void* send;
  void* recv;
  std::size_t count;
  collectives::DType dtype;
  collectives::ReduceOp op;
  int root;
  int device;  // collectives::kHost, or the CUDA device of send and recv
};

/// Something to time: ringgrad with one algorithm, or another library. prepare() is called
/// outside the timing and returns the operation to time (it may allocate, e.g. gloo's plans).
struct Contender {
  std::string name;
  std::function<std::function<void()>(const OpSetup&)> prepare;
  bool out_of_place = true;  // false: only in place (the out-of-place columns read "n/a")
  /// Whether it can run a row of this dtype (MPI cannot reduce 16-bit floats); empty: every
  /// dtype. A row it cannot run reads "n/a".
  std::function<bool(collectives::DType)> takes;
};

/// Parses nccl-tests' flags (-b -e -f -i -n -w -c -o -d -r, plus -a ALGO[,...] (ring, tree, hd,
/// hier, oneshot, linear, pairwise, bruck, auto), --calibrate, --json FILE, --device cpu|cuda, --backend
/// ringgrad|nccl|mpi|both), refusing sizes and counts that make no sweep, joins the job
/// from the environment (ringgrad-run sets it), and prints the table on rank 0. With --device
/// cuda each rank times buffers on cuda:(LOCAL_RANK % GPUs); --backend both times ringgrad's
/// algorithms and NCCL in one table, row by row (NCCL needs one GPU per rank: where ranks share
/// a GPU its rows are left out with a note). `extra` adds host-memory contenders (gloo) given
/// the communicator. Returns the process exit status (1 when any #wrong).
int run_perf(collectives::CollKind kind, int argc, char** argv,
             const std::function<std::vector<Contender>(collectives::Communicator&)>& extra = {});

}  // namespace ringgrad::bench
