// MpiBackend: the host-memory calls of a Communicator run by MPI instead of ringgrad's own
// algorithms (RINGGRAD_BACKEND=mpi, for a program started by mpirun): MPI_Bcast, MPI_Reduce,
// MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Gather, MPI_Scatter,
// MPI_Alltoall, MPI_Barrier, MPI_Send/Recv, and MPI_Irecv/Isend/Waitall for batches, all on
// MPI_COMM_WORLD, so a training program gets its cluster's MPI (its interconnect, its tuned
// collectives) with no other change. The argument check and device buffers stay ringgrad's.
#pragma once

#include <cstdint>
#include <span>

#include "collectives/algo.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/p2p_op.h"

namespace ringgrad::collectives {

class MpiBackend {
 public:
  /// Initialises MPI (MPI_THREAD_SERIALIZED: one call at a time, from any thread) unless the
  /// program did, and checks that MPI_COMM_WORLD's rank and size are the job's. Throws
  /// CollectiveError naming both when they differ (the program was not started by mpirun).
  MpiBackend(int rank, int world_size);
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  /// Runs one call on host buffers; `tag` only for send/recv. AVG is MPI_SUM, then ringgrad's
  /// division. Throws CollectiveError (float16/bfloat16 reductions: MPI has no such types),
  /// transport::TransportError when MPI returns an error.
  void run(CollKind kind, const CollArgs& args, int peer, uint64_t tag);
  void run_batch(std::span<const P2POp> ops, uint64_t tag);
  /// MPI_Alltoallv with the counts' prefix sums as displacements.
  void run_all_to_all_v(const CollArgs& args, std::span<const std::size_t> send_counts,
                        std::span<const std::size_t> recv_counts);

 private:
  int rank_, world_size_;
};

}  // namespace ringgrad::collectives
