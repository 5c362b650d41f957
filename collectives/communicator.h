// Communicator: a process group over the transport, with NCCL's collectives (broadcast, reduce,
// all_reduce, all_gather, reduce_scatter), MPI's gather, scatter, all_to_all and all_to_all_v,
// barrier, send/recv and batches of them, blocking and asynchronous, and split into groups
// (MPI_Comm_split). Buffers may be host memory (shared memory or TCP) or CUDA device memory
// (CUDA IPC, host staging, or NCCL).
//
// One call's road, in the order a reader meets it: this class builds the call's Task (task.h:
// counts, size, this rank's validation), picks its algorithm (algo_choice.h) and queues it
// (call_queue.h: sequence numbers, the worker thread); CallRunner (call_runner.h) runs it: the
// argument check (check.h), then the algorithm (algorithms/) over a Link (links/). A group has
// its own queue, sequence numbers and transport stream.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/algo.h"
#include "collectives/algo_choice.h"
#include "collectives/buffer.h"
#include "collectives/collective_error.h"
#include "collectives/comm_options.h"
#include "collectives/comm_stats.h"
#include "collectives/dtype.h"
#include "collectives/group.h"
#include "collectives/host_layout.h"
#include "collectives/p2p_op.h"
#include "collectives/work.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class CallQueue;
class CallRunner;
class FlightRecorder;
class MpiBackend;
struct Task;

/// Device buffers (Buffer::device >= 0), the contract: every buffer of one call is on the same
/// device, and all device calls of a communicator use one device (the first call's). The
/// caller's data must be ready when the call is made: synchronise the stream that wrote it
/// first. A blocking call (or Work::wait) returns when the result is in device memory and
/// visible to every stream. The communicator works on its own non-blocking stream(s), so
/// nothing is ordered against the caller's streams beyond that. With Backend::kRinggrad the
/// algorithms run over CUDA IPC for peers on this host (same GPU, or peer-to-peer between GPUs)
/// and through pinned host buffers over TCP for the others; with Backend::kNccl device calls go
/// to NCCL, host calls still to ringgrad's TCP path (like a gloo + NCCL process group).
class Communicator {
 public:
  /// Joins the job described by config (see transport::Transport); with backend mpi and no
  /// master_port (mpirun without MASTER_ADDR/MASTER_PORT), through MPI (mpi_bootstrap.h).
  /// Throws TransportError; CollectiveError when options.backend is nccl but this build has no
  /// NCCL or no GPU is visible, or mpi and it has no MPI, or (on every rank) when some ranks
  /// have the argument check on and others off.
  explicit Communicator(const transport::Config& config, CommOptions options = CommOptions::from_env());
  explicit Communicator(std::unique_ptr<transport::Transport> transport, CommOptions options = CommOptions::from_env());
  /// Finishes the queued operations, then closes the connections.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This process's rank and the number of ranks, in this communicator (a group's own).
  int rank() const { return group_.rank; }
  int world_size() const { return group_.size; }
  /// The group this communicator is: the world, or one made by split.
  const Group& group() const { return group_; }

  /// MPI_Comm_split: every rank of this communicator calls it (it is a collective, in issue
  /// order with the others); ranks passing the same color form one group, ordered by key, then
  /// by their rank here. A negative color joins no group and gets nullptr. The group shares
  /// this communicator's TCP connections on a stream of its own, so it may run at the same
  /// time as this one and its other groups, from other threads. A group runs host buffers
  /// only, over TCP (not shared memory), or MPI_Comm_split's communicator under backend mpi.
  /// `name` is how its errors name it (default "split N color C"). Throws CollectiveError,
  /// TransportError.
  std::unique_ptr<Communicator> split(int color, int key, std::string name = "");
  /// How host-memory collectives travel: "shared memory", or "TCP (why not shared memory)";
  /// empty until the first host collective decided it.
  std::string host_path() const;
  const CommOptions& options() const { return options_; }
  /// Which ranks share a host (from the addresses they listen on).
  const HostLayout& hosts() const { return hosts_; }
  /// The job's rendezvous store (out-of-band agreement, e.g. another library's rendezvous).
  transport::Store& store() { return transport_->store(); }
  /// Replaces the cost model; it must be the same on every rank (calibrate() ensures it).
  void set_cost_model(const CostModel& model);
  /// The algorithm a call of `kind` on n bytes (nccl-tests' size) with `algo` will run.
  Algo resolve(CollKind kind, Algo algo, std::size_t n) const;
  /// The calls and bytes asked of this communicator so far (its groups count their own).
  CommStats stats() const;
  void reset_stats();
  /// Its last collectives and how far each got (flight_recorder.h); written to
  /// RINGGRAD_FLIGHT_RECORDER_DIR when a collective fails and on SIGUSR1.
  const FlightRecorder& flight_recorder() const { return *recorder_; }

  // Blocking collectives. Every rank calls each one, in the same order. In place when recv and
  // send are the same memory (all_gather: send == recv + rank*count; reduce_scatter:
  // recv == send + rank*count, NCCL's convention). Errors: CollectiveError, TransportError.

  /// Copies root's send (count elements) into every rank's recv (count elements).
  /// Non-root ranks may pass an empty send; only its dtype and the recv count matter there.
  void broadcast(ConstBuffer send, Buffer recv, int root, Algo algo = Algo::kAuto);
  /// recv at root = op over ranks of send, element-wise (count elements); recv is ignored elsewhere.
  void reduce(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo = Algo::kAuto);
  /// recv = op over ranks of send, element-wise, on every rank (count elements each).
  void all_reduce(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo = Algo::kAuto);
  /// recv (count * p elements) = the concatenation of every rank's send (count), in rank order.
  void all_gather(ConstBuffer send, Buffer recv, Algo algo = Algo::kAuto);
  /// recv (count) = block `rank` of op over ranks of send (count * p elements).
  void reduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo = Algo::kAuto);
  /// recv at root (count * p elements) = the concatenation of every rank's send (count), in
  /// rank order (MPI_Gather); recv is ignored elsewhere. In place: send == recv + root*count.
  void gather(ConstBuffer send, Buffer recv, int root, Algo algo = Algo::kAuto);
  /// recv (count) = block `rank` of root's send (count * p elements) (MPI_Scatter); non-root
  /// ranks may pass an empty send. In place: recv == send + root*count.
  void scatter(ConstBuffer send, Buffer recv, int root, Algo algo = Algo::kAuto);
  /// send and recv hold p blocks of count / p elements: block q of send goes to rank q, which
  /// stores it as its block `rank` (MPI_Alltoall). send.count must be a multiple of p. In
  /// place when send == recv.
  void all_to_all(ConstBuffer send, Buffer recv, Algo algo = Algo::kAuto);
  /// Block q of send (send_counts[q] elements; blocks back to back in rank order) goes to rank
  /// q, which stores it as its block `rank` (recv_counts[q] elements from rank q, back to back):
  /// MPI_Alltoallv with packed displacements. Host buffers, out of place; one count per rank,
  /// send.count and recv.count their sums; rank r's send_counts[q] must be rank q's
  /// recv_counts[r] (the argument check compares every pair and names each mismatch).
  void all_to_all_v(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                    std::span<const std::size_t> recv_counts);
  /// Returns once every rank has entered it (dissemination barrier).
  void barrier();
  /// Point-to-point, matched with the peer's recv/send of the same size and tag in issue order.
  /// On device buffers a send returns only once the peer's recv has taken the data, so ranks
  /// that send to each other at once (a ring, a pipeline) use batch_send_recv instead;
  /// send_async does not help, as the recv queues behind it on the same worker.
  void send(ConstBuffer data, int peer, uint64_t tag = 0);
  void recv(Buffer data, int peer, uint64_t tag = 0);
  /// Runs every send and receive of `ops` as one operation: all receives are posted, then all
  /// sends, then all are waited for, so ranks exchanging in both directions at once (a ring,
  /// a pipeline) cannot deadlock (torch's batch_isend_irecv, MPI_Waitall). Each op matches
  /// the peer's op of the same `tag` in issue order. Host buffers travel over TCP; device
  /// buffers through the device backend (NCCL: one ncclGroupStart/End).
  void batch_send_recv(std::vector<P2POp> ops, uint64_t tag = 0);

  // Asynchronous forms: queued and run in issue order on the worker thread.
  Work broadcast_async(ConstBuffer send, Buffer recv, int root, Algo algo = Algo::kAuto);
  Work reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo = Algo::kAuto);
  Work all_reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo = Algo::kAuto);
  Work all_gather_async(ConstBuffer send, Buffer recv, Algo algo = Algo::kAuto);
  Work reduce_scatter_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo = Algo::kAuto);
  Work gather_async(ConstBuffer send, Buffer recv, int root, Algo algo = Algo::kAuto);
  Work scatter_async(ConstBuffer send, Buffer recv, int root, Algo algo = Algo::kAuto);
  Work all_to_all_async(ConstBuffer send, Buffer recv, Algo algo = Algo::kAuto);
  Work all_to_all_v_async(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                          std::span<const std::size_t> recv_counts);
  Work barrier_async();
  Work send_async(ConstBuffer data, int peer, uint64_t tag = 0);
  Work recv_async(Buffer data, int peer, uint64_t tag = 0);
  Work batch_isend_irecv(std::vector<P2POp> ops, uint64_t tag = 0);

 private:
  // A group's communicator (split): the parent's transport and options, its own queue.
  Communicator(std::shared_ptr<transport::Transport> transport, CommOptions options, Group group, HostLayout hosts,
               std::unique_ptr<MpiBackend> mpi);
  // Makes the recorder, runner and queue (both constructors).
  void start(std::unique_ptr<MpiBackend> mpi);
  // Every call goes here: its algorithm chosen, this rank's arguments judged, then queued.
  Work issue(Task&& task, bool blocking);

  std::shared_ptr<transport::Transport> transport_;  // shared with the parent and its groups
  CommOptions options_;
  Group group_;
  HostLayout hosts_;
  AlgoChoice algo_choice_;
  std::atomic<int> bound_device_{kHost};  // the device of the first device call
  std::unique_ptr<FlightRecorder> recorder_;
  std::unique_ptr<CallRunner> runner_;
  std::unique_ptr<CallQueue> queue_;  // declared last: destroyed first, it finishes the calls
};

}  // namespace ringgrad::collectives
