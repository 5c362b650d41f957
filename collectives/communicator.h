// Communicator: a process group over the transport, with NCCL's collectives (broadcast, reduce,
// all_reduce, all_gather, reduce_scatter), MPI's gather, scatter, all_to_all and all_to_all_v,
// barrier, send/recv and batches of them, blocking and asynchronous, and split into groups
// (MPI_Comm_split). Collectives issued in the same order on every rank are matched by sequence
// number and run, in that order, on one worker thread per communicator, so they progress while
// the caller computes; a group has its own worker, sequence numbers and transport stream.
// Buffers may be host memory (TCP) or CUDA device memory (CUDA IPC, host staging, or NCCL).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "collectives/algo.h"
#include "collectives/buffer.h"
#include "collectives/collective_error.h"
#include "collectives/comm_options.h"
#include "collectives/dtype.h"
#include "collectives/group.h"
#include "collectives/host_layout.h"
#include "collectives/p2p_op.h"
#include "collectives/work.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

struct Agreement;
class DeviceBackend;
class FlightRecorder;
struct HostBuffers;
class Link;
class MpiBackend;
class ShmPeers;
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
/// What a communicator was asked to move, per kind of call, since it was made (or reset):
/// the calls, and their bytes as nccl-tests sizes them (the whole buffer; for all-gather,
/// reduce-scatter, gather and scatter all p blocks), for send, recv and batches the bytes this
/// rank sends and receives. What travels on the wire follows from the algorithm (an all-reduce
/// by ring sends 2(p-1)/p of its size from each rank: docs/collectives.md's busbw factors).
struct CommStats {
  struct Entry {
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
  };
  std::map<CollKind, Entry> by_kind;
  /// Bytes over all kinds.
  std::uint64_t total_bytes() const;
  /// "all_reduce 18 calls 7.08 MB, batch_send_recv 4 calls 0.79 MB" (MB = 1e6 bytes).
  std::string describe() const;
};

class Communicator {
 public:
  /// Joins the job described by config (see transport::Transport). Throws TransportError;
  /// CollectiveError when options.backend is nccl but this build has no NCCL or no GPU is visible,
  /// or (on every rank) when some ranks have the argument check on and others off.
  explicit Communicator(const transport::Config& config, CommOptions options = CommOptions::from_env());
  explicit Communicator(std::unique_ptr<transport::Transport> transport, CommOptions options = CommOptions::from_env());
  /// Finishes the queued operations, then closes the connections.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This process's rank and the number of ranks, in this communicator (a group's own).
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
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
  Work submit(Task task, bool blocking);
  void worker_loop();
  // Runs a task on this thread; returns its error (none: null). The caller completes its Work.
  std::exception_ptr execute(Task& task);
  std::exception_ptr execute_nothrow(Task& task) noexcept;
  void move_data(Task& task);  // the call's algorithm over its link, MPI or the device backend
  Algo resolve_locked(CollKind kind, Algo algo, std::size_t n) const;  // resolve(), mutex_ held
  // The argument check; true when its exchange also finished the call (check.h: data_rides).
  bool check_agreement(const Task& task);
  void choose_host_path();
  // The link for host memory: shared memory for collectives once set up, else TCP.
  std::unique_ptr<Link> host_link(const Task& task, uint64_t tag);
  void break_on(const std::exception& error, uint64_t first);
  void run_on_mpi(Task& task);

  Communicator(std::shared_ptr<transport::Transport> transport, CommOptions options, Group group, HostLayout hosts);
  // "all_reduce #3 on rank 1 of group tp (...)": how errors name the call and this rank.
  std::string where(const Task& task) const;

  std::shared_ptr<transport::Transport> transport_;  // shared with the parent and its groups
  CommOptions options_;
  Group group_;
  int rank_;
  int world_size_;
  HostLayout hosts_;
  int model_hosts_;  // hosts as the cost model sees them: hosts_.hosts() when uniform, else 1
  struct Choice {
    CollKind kind = CollKind::kBarrier;
    std::size_t bytes = 0;
    Algo algo = Algo::kAuto;  // kAuto: nothing kept yet
  };
  mutable Choice last_choice_;  // resolve()'s last answer from the model; under mutex_
  std::unique_ptr<HostBuffers> host_buffers_;  // reused by every host link; the thread running a task
  std::unique_ptr<DeviceBackend> device_;  // made by the first device call; thread running a task
  std::unique_ptr<MpiBackend> mpi_;        // backend mpi: runs the host calls
  // Made by the first host collective when every rank is on this host; thread running a task.
  std::unique_ptr<ShmPeers> shm_;
  bool shm_decided_ = false;
  // How ShmLinks wait (ShmPoll, shm_link.h); set with shm_.
  std::chrono::microseconds shm_poll_alone_{0}, shm_poll_beside_caller_{0};
  // Callers blocked in Work::wait on this communicator's calls (an atomic: they count it
  // without the lock). Shared with every Work::State, which may outlive the communicator.
  std::shared_ptr<std::atomic<int>> callers_waiting_ = std::make_shared<std::atomic<int>>(0);
  // The argument check's findings, reused by every checked call (so none allocates); made by
  // the first; thread running a task.
  std::unique_ptr<Agreement> agreement_;
  std::string host_path_;  // how host collectives travel, once decided

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Task>> queue_;
  bool running_ = false;  // a task runs (on the worker or inline on a caller)
  bool stop_ = false;
  std::string broken_;   // first transport error; later calls fail with it
  uint64_t next_seq_ = 0;
  CommStats stats_;
  std::unique_ptr<FlightRecorder> recorder_;
  int bound_device_ = kHost;  // the device of the first device call
  std::thread worker_;
};

}  // namespace ringgrad::collectives
