// MpiBackend: the host-memory calls of a Communicator run by MPI instead of ringgrad's own
// algorithms (RINGGRAD_BACKEND=mpi, for a program started by mpirun): MPI_Bcast, MPI_Reduce,
// MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Gather, MPI_Scatter,
// MPI_Alltoall, MPI_Barrier, MPI_Send/Recv, and MPI_Irecv/Isend/Waitall for batches, on
// MPI_COMM_WORLD (or, for a group, MPI_Comm_split's communicator), so a training program gets
// its cluster's MPI (its interconnect, its tuned collectives) with no other change. The
// argument check and device buffers stay ringgrad's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "collectives/algo.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/p2p_op.h"

namespace ringgrad::collectives {

/// Initialises MPI (MPI_THREAD_MULTIPLE: groups call from their own threads) unless the program
/// did, with errors returned as codes, and checks that MPI_COMM_WORLD's rank and size are the
/// job's. Throws CollectiveError naming both when they differ (the program was not started by
/// mpirun).
void start_mpi(int rank, int world_size);

class MpiBackend {
 public:
  /// Starts MPI (start_mpi) and runs on MPI_COMM_WORLD. Throws as start_mpi does.
  MpiBackend(int rank, int world_size);
  ~MpiBackend();
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  /// MPI_Comm_split of this backend's communicator (collective over it); nullptr for a
  /// negative color. Throws CollectiveError when MPI lacks MPI_THREAD_MULTIPLE.
  std::unique_ptr<MpiBackend> split(int color, int key);

  /// Runs one call on host buffers; `tag` only for send/recv. AVG is MPI_SUM, then ringgrad's
  /// division. Throws CollectiveError (float16/bfloat16 reductions: MPI has no such types),
  /// transport::TransportError when MPI returns an error.
  void run(CollKind kind, const CollArgs& args, int peer, uint64_t tag);
  void run_batch(std::span<const P2POp> ops, uint64_t tag);
  /// MPI_Alltoallv with the counts' prefix sums as displacements.
  void run_all_to_all_v(const CollArgs& args, std::span<const std::size_t> send_counts,
                        std::span<const std::size_t> recv_counts);

 private:
  struct Comm;  // the MPI_Comm, kept out of this header
  MpiBackend(std::unique_ptr<Comm> comm, int rank, int world_size);

  int rank_, world_size_;
  std::unique_ptr<Comm> comm_;
};

}  // namespace ringgrad::collectives
