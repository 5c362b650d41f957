// Communicator: how one call travels, top to bottom in this file. A public call builds a Task
// (task.cc: counts, size, this rank's validation) and submits it: the algorithm is chosen and
// collectives get the next sequence number, the same on every rank. A blocking call with
// nothing queued runs inline on the caller's thread (no hand-off on the latency path); anything
// else joins the queue that one worker thread runs in order. Running a task: the argument check
// (check.cc), the choice of link (shared memory, TCP, or the device backend), then the
// algorithm (algorithms/dispatch.cc).
#include "collectives/communicator.h"

#include <algorithm>

#include <fmt/format.h>

#include "collectives/algorithms/algorithms.h"
#include "collectives/backends/device_backend.h"
#include "collectives/backends/mpi_backend.h"
#include "collectives/check.h"
#include "collectives/flight_recorder.h"
#include "collectives/links/host_link.h"
#include "collectives/links/host_memory_link.h"
#include "collectives/links/plain_shm_link.h"
#include "collectives/links/shm_link.h"
#include "collectives/links/shm_peers.h"
#include "collectives/task.h"
#include "transport/tag_names.h"

namespace ringgrad::collectives {

struct Work::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  double done_at_s = 0;
  std::exception_ptr error;
  std::shared_ptr<std::atomic<int>> callers_waiting;  // the Communicator's count (it may end first)
};

namespace {

// send/recv tags live in their own space (bit 63), apart from collectives' sequence numbers
// and the check's kCheckTag (bit 62).
constexpr uint64_t kP2PTagBit = uint64_t{1} << 63;

void complete(Work::State& state, std::exception_ptr error) {
  {
    std::lock_guard lock(state.mutex);
    state.done = true;
    state.done_at_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    state.error = std::move(error);
  }
  state.cv.notify_all();
}

const Buffer kNoRecv{};

// What this layer's tags mean, for transport errors (transport/tag_names.h).
std::string describe_tag(uint64_t tag) {
  if ((tag & kP2PTagBit) != 0) return fmt::format("send/recv tag {}", tag & ~kP2PTagBit);
  if ((tag & kCheckTag) != 0) return "the argument check's exchange";
  return fmt::format("the data of collective #{}", tag);
}

// The bytes a send, recv or batch moves from or to this rank.
std::uint64_t point_to_point_bytes(const Task& task) {
  if (task.kind != CollKind::kBatchSendRecv) return task.args.count * dtype_size(task.args.dtype);
  std::uint64_t bytes = 0;
  for (const P2POp& op : task.ops) bytes += op.buffer.count * dtype_size(op.buffer.dtype);
  return bytes;
}

}  // namespace

void Work::wait() {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  if (!state_->done) {  // counted while it waits: the worker may poll for it meanwhile
    state_->callers_waiting->fetch_add(1, std::memory_order_relaxed);
    state_->cv.wait(lock, [&] { return state_->done; });
    state_->callers_waiting->fetch_sub(1, std::memory_order_relaxed);
  }
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Work::completed() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

double Work::completed_at() const {
  if (!state_) return 0;
  std::lock_guard lock(state_->mutex);
  return state_->done_at_s;
}

// --- Construction ------------------------------------------------------------------------

Communicator::Communicator(const transport::Config& config, CommOptions options)
    : Communicator(std::make_unique<transport::Transport>(config), std::move(options)) {}

Communicator::Communicator(std::unique_ptr<transport::Transport> transport, CommOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      group_{0, transport_->rank(), transport_->world_size(), {}, {}},
      rank_(group_.rank),
      world_size_(group_.size),
      hosts_(world_size_ > 1 ? HostLayout::from_store(transport_->store(), world_size_) : HostLayout{{0}}),
      model_hosts_(hosts_.uniform() ? hosts_.hosts() : 1),
      host_buffers_(std::make_unique<HostBuffers>()) {
  options_.validate();
  check_backend(options_.backend, rank_);
  if (world_size_ > 1) agree_on_check(transport_->store(), rank_, world_size_, options_.check_args);
  recorder_ = std::make_unique<FlightRecorder>(describe_rank(group_), rank_, flight_recorder_capacity());
  transport::set_tag_describer(describe_tag);  // transport errors say what a message was
#if RINGGRAD_HAVE_MPI
  if (options_.backend == Backend::kMpi) mpi_ = std::make_unique<MpiBackend>(rank_, world_size_);
#endif
  worker_ = std::thread([this] { worker_loop(); });
}

// A group: the parent's transport and options, no shared memory (its inboxes are the parent's).
Communicator::Communicator(std::shared_ptr<transport::Transport> transport, CommOptions options, Group group,
                           HostLayout hosts)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      group_(std::move(group)),
      rank_(group_.rank),
      world_size_(group_.size),
      hosts_(std::move(hosts)),
      model_hosts_(hosts_.uniform() ? hosts_.hosts() : 1),
      host_buffers_(std::make_unique<HostBuffers>()),
      shm_decided_(true),
      host_path_("TCP (a group travels on the job's TCP connections, on a stream of its own)"),
      recorder_(std::make_unique<FlightRecorder>(describe_rank(group_), group_.job_rank(group_.rank), flight_recorder_capacity())) {
  worker_ = std::thread([this] { worker_loop(); });
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, std::string name) {
  // Every rank's color and key, and from rank 0 a stream number no other group of the job has
  // (sibling groups share it: they have no two ranks in common, so no connection carries both).
  int64_t mine[3] = {color, key, 0};
  if (rank_ == 0) mine[2] = store().add("ringgrad/group_streams", 1);
  std::vector<int64_t> all(3 * static_cast<std::size_t>(world_size_));
  all_gather(ConstBuffer(mine, 3, DType::kInt64), Buffer(all.data(), all.size(), DType::kInt64));
#if RINGGRAD_HAVE_MPI
  std::unique_ptr<MpiBackend> mpi = mpi_ ? mpi_->split(color, key) : nullptr;  // every rank takes part
#endif
  if (color < 0) return nullptr;
  std::vector<int> ranks;  // parent ranks of my group, in group order
  for (int q = 0; q < world_size_; ++q)
    if (all[3 * static_cast<std::size_t>(q)] == color) ranks.push_back(q);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    return all[3 * static_cast<std::size_t>(a) + 1] < all[3 * static_cast<std::size_t>(b) + 1];
  });
  Group group;
  group.stream = static_cast<uint32_t>(all[2]);
  group.size = static_cast<int>(ranks.size());
  group.rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
  for (int q : ranks) group.members.push_back(group_.job_rank(q));
  group.name = name.empty() ? fmt::format("split {} color {}", group.stream, color) : std::move(name);
  auto child = std::unique_ptr<Communicator>(new Communicator(transport_, options_, std::move(group), hosts_.subset(ranks)));
#if RINGGRAD_HAVE_MPI
  child->mpi_ = std::move(mpi);
#endif
  return child;
}

std::string Communicator::where(const Task& task) const {
  if (!is_collective(task.kind)) return fmt::format("{} on {}", coll_name(task.kind), describe_rank(group_));
  return fmt::format("{} #{} on {}", coll_name(task.kind), task.seq, describe_rank(group_));
}

Communicator::~Communicator() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void Communicator::set_cost_model(const CostModel& model) {
  std::lock_guard lock(mutex_);
  options_.model = model;
  last_choice_ = {};
}

Algo Communicator::resolve(CollKind kind, Algo algo, std::size_t n) const {
  std::lock_guard lock(mutex_);
  return resolve_locked(kind, algo, n);
}

Algo Communicator::resolve_locked(CollKind kind, Algo algo, std::size_t n) const {
  if (algo != Algo::kAuto) return algo;
  if (has_algo(kind, options_.algo)) return options_.algo;
  if (kind == CollKind::kBarrier || !is_collective(kind)) return Algo::kAuto;  // one way each
  // A training loop asks about the same few sizes over and over: keep the last answer (the
  // model's comparison of every algorithm is a tenth of a small all-reduce's time).
  if (last_choice_.algo == Algo::kAuto || last_choice_.kind != kind || last_choice_.bytes != n)
    last_choice_ = {kind, n, options_.model.choose(kind, n, world_size_, model_hosts_)};
  return last_choice_.algo;
}

std::uint64_t CommStats::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [kind, e] : by_kind) total += e.bytes;
  return total;
}

std::string CommStats::describe() const {
  std::string out;
  for (const auto& [kind, e] : by_kind)
    out += fmt::format("{}{} {} call{} {:.2f} MB", out.empty() ? "" : ", ", coll_name(kind), e.calls,
                       e.calls == 1 ? "" : "s", static_cast<double>(e.bytes) / 1e6);
  return out.empty() ? "nothing" : out;
}

CommStats Communicator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Communicator::reset_stats() {
  std::lock_guard lock(mutex_);
  stats_ = {};
}

std::string Communicator::host_path() const {
  std::lock_guard lock(mutex_);
  return host_path_;
}

// --- The public calls: build a Task, submit it ----------------------------------------------

Work Communicator::broadcast_async(ConstBuffer send, Buffer recv, int root, Algo algo) {
  return submit(collective_task(CollKind::kBroadcast, send, recv, ReduceOp::SUM, root, algo, rank_, world_size_), false);
}
Work Communicator::reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo) {
  return submit(collective_task(CollKind::kReduce, send, recv, op, root, algo, rank_, world_size_), false);
}
Work Communicator::all_reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  return submit(collective_task(CollKind::kAllReduce, send, recv, op, -1, algo, rank_, world_size_), false);
}
Work Communicator::all_gather_async(ConstBuffer send, Buffer recv, Algo algo) {
  return submit(collective_task(CollKind::kAllGather, send, recv, ReduceOp::SUM, -1, algo, rank_, world_size_), false);
}
Work Communicator::reduce_scatter_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  return submit(collective_task(CollKind::kReduceScatter, send, recv, op, -1, algo, rank_, world_size_), false);
}
Work Communicator::gather_async(ConstBuffer send, Buffer recv, int root, Algo algo) {
  return submit(collective_task(CollKind::kGather, send, recv, ReduceOp::SUM, root, algo, rank_, world_size_), false);
}
Work Communicator::scatter_async(ConstBuffer send, Buffer recv, int root, Algo algo) {
  return submit(collective_task(CollKind::kScatter, send, recv, ReduceOp::SUM, root, algo, rank_, world_size_), false);
}
Work Communicator::all_to_all_async(ConstBuffer send, Buffer recv, Algo algo) {
  return submit(collective_task(CollKind::kAllToAll, send, recv, ReduceOp::SUM, -1, algo, rank_, world_size_), false);
}
Work Communicator::all_to_all_v_async(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                                      std::span<const std::size_t> recv_counts) {
  return submit(all_to_all_v_task(send, send_counts, recv, recv_counts, rank_, world_size_), false);
}
Work Communicator::barrier_async() {
  return submit(collective_task(CollKind::kBarrier, {}, {}, ReduceOp::SUM, -1, Algo::kAuto, rank_, world_size_), false);
}
Work Communicator::send_async(ConstBuffer data, int peer, uint64_t tag) {
  return submit(point_to_point_task(CollKind::kSend, data, kNoRecv, peer, tag, rank_, world_size_), false);
}
Work Communicator::recv_async(Buffer data, int peer, uint64_t tag) {
  return submit(point_to_point_task(CollKind::kRecv, {}, data, peer, tag, rank_, world_size_), false);
}

Work Communicator::batch_isend_irecv(std::vector<P2POp> ops, uint64_t tag) {
  return submit(batch_task(std::move(ops), tag, rank_, world_size_), false);
}

void Communicator::broadcast(ConstBuffer send, Buffer recv, int root, Algo algo) {
  submit(collective_task(CollKind::kBroadcast, send, recv, ReduceOp::SUM, root, algo, rank_, world_size_), true);
}
void Communicator::reduce(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo) {
  submit(collective_task(CollKind::kReduce, send, recv, op, root, algo, rank_, world_size_), true);
}
void Communicator::all_reduce(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  submit(collective_task(CollKind::kAllReduce, send, recv, op, -1, algo, rank_, world_size_), true);
}
void Communicator::all_gather(ConstBuffer send, Buffer recv, Algo algo) {
  submit(collective_task(CollKind::kAllGather, send, recv, ReduceOp::SUM, -1, algo, rank_, world_size_), true);
}
void Communicator::reduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  submit(collective_task(CollKind::kReduceScatter, send, recv, op, -1, algo, rank_, world_size_), true);
}
void Communicator::gather(ConstBuffer send, Buffer recv, int root, Algo algo) {
  submit(collective_task(CollKind::kGather, send, recv, ReduceOp::SUM, root, algo, rank_, world_size_), true);
}
void Communicator::scatter(ConstBuffer send, Buffer recv, int root, Algo algo) {
  submit(collective_task(CollKind::kScatter, send, recv, ReduceOp::SUM, root, algo, rank_, world_size_), true);
}
void Communicator::all_to_all(ConstBuffer send, Buffer recv, Algo algo) {
  submit(collective_task(CollKind::kAllToAll, send, recv, ReduceOp::SUM, -1, algo, rank_, world_size_), true);
}
void Communicator::all_to_all_v(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                                std::span<const std::size_t> recv_counts) {
  submit(all_to_all_v_task(send, send_counts, recv, recv_counts, rank_, world_size_), true);
}
void Communicator::barrier() {
  submit(collective_task(CollKind::kBarrier, {}, {}, ReduceOp::SUM, -1, Algo::kAuto, rank_, world_size_), true);
}
void Communicator::send(ConstBuffer data, int peer, uint64_t tag) {
  submit(point_to_point_task(CollKind::kSend, data, kNoRecv, peer, tag, rank_, world_size_), true);
}
void Communicator::recv(Buffer data, int peer, uint64_t tag) {
  submit(point_to_point_task(CollKind::kRecv, {}, data, peer, tag, rank_, world_size_), true);
}
void Communicator::batch_send_recv(std::vector<P2POp> ops, uint64_t tag) {
  submit(batch_task(std::move(ops), tag, rank_, world_size_), true);
}

// --- The queue -----------------------------------------------------------------------------

// A small blocking call is mostly this function's own cost, so it takes the lock once on the
// way in, reads the clock once for queued-and-started, and runs inline without a Work::State.
Work Communicator::submit(Task task, bool blocking) {
  std::unique_lock lock(mutex_);
  if (task.invalid.empty()) task.algo = resolve_locked(task.kind, task.algo, task.bytes);
  if (!broken_.empty())
    throw transport::TransportError(fmt::format("{} on {}: the communicator is broken by an earlier error: {}",
                                                coll_name(task.kind), describe_rank(group_), broken_));
  if (task.device != kHost && !group_.is_world() && task.invalid.empty())
    task.invalid = "device buffers in a group communicator: groups run host buffers only (yet)";
  if (task.device != kHost && task.invalid.empty()) {
    if (bound_device_ == kHost) bound_device_ = task.device;
    if (task.device != bound_device_)
      task.invalid = fmt::format("buffers are on cuda:{} but this communicator runs on cuda:{} (its first device "
                                 "call's): one communicator per device", task.device, bound_device_);
  }
  // Without the check no other rank would hear of a bad argument: throw here, before any data moves.
  if (!task.invalid.empty() && (!options_.check_args || !is_collective(task.kind)))
    throw CollectiveError(fmt::format("{} on {}: {}", coll_name(task.kind), describe_rank(group_), task.invalid));
  const bool inline_run = blocking && queue_.empty() && !running_;  // on the caller's thread: no hand-off
  task.seq = next_seq_;  // a send/recv runs before the collective issued after it
  if (is_collective(task.kind)) {
    ++next_seq_;
    recorder_->queued(task.seq, task.kind, task.bytes, task.args.dtype, task.algo, inline_run);
  }
  CommStats::Entry& counted = stats_.by_kind[task.kind];
  ++counted.calls;
  counted.bytes += is_collective(task.kind) ? task.bytes : point_to_point_bytes(task);
  if (inline_run) {
    running_ = true;
    lock.unlock();
    const std::exception_ptr error = execute_nothrow(task);
    lock.lock();
    running_ = false;
    // Only the worker waits on cv_: wake it only if something was queued meanwhile (or the
    // communicator is closing). A wake-up per call costs two context switches, and on a
    // machine with as many ranks as cores it takes the CPU from a rank that is polling.
    if (!queue_.empty() || stop_) cv_.notify_all();
    lock.unlock();
    if (error) std::rethrow_exception(error);
    return Work();
  }
  auto state = std::make_shared<Work::State>();
  state->callers_waiting = callers_waiting_;
  task.state = state;
  queue_.push_back(std::make_unique<Task>(std::move(task)));
  lock.unlock();
  cv_.notify_all();
  Work work(state);
  if (blocking) work.wait();
  return work;
}

void Communicator::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return (!queue_.empty() && !running_) || (stop_ && queue_.empty() && !running_); });
    if (queue_.empty()) return;
    std::unique_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    // A queued call may find the communicator broken by the one before it.
    std::exception_ptr error;
    if (!broken_.empty())
      error = std::make_exception_ptr(transport::TransportError(
          fmt::format("{}: the communicator is broken by an earlier error: {}", where(*task), broken_)));
    lock.unlock();
    if (!error) {
      if (is_collective(task->kind)) recorder_->started(task->seq);
      error = execute_nothrow(*task);
    } else if (is_collective(task->kind)) {
      recorder_->ended(task->seq, false);
    }
    complete(*task->state, error);
    lock.lock();
    running_ = false;
  }
}

// --- Running one task -------------------------------------------------------------------------

std::exception_ptr Communicator::execute(Task& task) {
  std::exception_ptr error;
  try {
    const bool done = check_agreement(task);  // a small call's data may ride with the check
    // Every rank agreed on this call, so all meet here: the first host collective sets up
    // shared memory, whether or not its data rode in the check.
    if (task.device == kHost && !mpi_ && is_collective(task.kind) && world_size_ > 1) choose_host_path();
    if (!done) move_data(task);
  } catch (const CollectiveError&) {
    error = std::current_exception();  // found before any data moved: still usable
  } catch (const transport::TransportError& e) {
    error = std::make_exception_ptr(transport::TransportError(fmt::format("{}: {}", where(task), e.what())));
    if (is_collective(task.kind)) recorder_->ended(task.seq, false);
    break_on(e, task.seq);
    recorder_->dump();  // what this rank was doing, for the launcher's desync report
  } catch (const std::exception& e) {
    error = std::current_exception();
    break_on(e, task.seq);
  }
  if (is_collective(task.kind)) recorder_->ended(task.seq, !error);
  return error;
}

// execute() catches what the call throws, but its handlers can throw too (formatting, a dump):
// whatever escapes is the call's error, so `running_` is always reset and no waiter hangs.
std::exception_ptr Communicator::execute_nothrow(Task& task) noexcept {
  try {
    return execute(task);
  } catch (...) {
    return std::current_exception();
  }
}

void Communicator::move_data(Task& task) {
  const uint64_t tag = is_collective(task.kind) ? task.seq : kP2PTagBit | task.tag;
  if (task.device == kHost && mpi_) {
    run_on_mpi(task);
  } else if (task.device == kHost) {
    const std::unique_ptr<Link> link = host_link(task, tag);
    if (task.kind == CollKind::kBatchSendRecv) irecv_isend_waitall(*link, task.ops);
    else if (task.kind == CollKind::kAllToAllV) pairwise_all_to_all_v(*link, task.args, task.send_counts, task.recv_counts);
    else run_collective(*link, task.kind, task.algo, task.args, task.peer, hosts_);
  } else {
    if (!device_) device_ = make_device_backend(*transport_, options_, task.device, hosts_);
    if (task.kind == CollKind::kBatchSendRecv) device_->run_batch(task.ops, tag);
    else device_->run(task.kind, task.algo, task.args, task.peer, tag);
  }
}

void Communicator::run_on_mpi(Task& task) {
#if RINGGRAD_HAVE_MPI
  if (task.kind == CollKind::kBatchSendRecv) mpi_->run_batch(task.ops, task.tag);
  else if (task.kind == CollKind::kAllToAllV) mpi_->run_all_to_all_v(task.args, task.send_counts, task.recv_counts);
  else mpi_->run(task.kind, task.args, task.peer, task.tag);
#else
  static_cast<void>(task);
#endif
}

// A transport failure leaves the ranks out of step: every later call fails with the first error.
// This rank runs no collective from `first` on (the failed call's sequence number, or for a
// send/recv the next collective's).
void Communicator::break_on(const std::exception& error, uint64_t first) {
  std::lock_guard lock(mutex_);
  broken_ = error.what();
  if (shm_) shm_->abort(rank_, first);  // peers waiting in those collectives wake and fail now
  // Abort: closing every connection makes the peers fail now instead of at their timeout
  // (and lets rank 0's transport leave without waiting for peers blocked on it).
  transport_->abort(error.what());
  transport_.reset();
  // Leaked on purpose: freeing device memory waits for the device, and our stream may wait
  // forever on an event of the dead peer. A broken communicator's process is about to end.
  static_cast<void>(device_.release());
}

bool Communicator::check_agreement(const Task& task) {
  if (!is_collective(task.kind) || !options_.check_args) return false;
  const std::size_t chunk = task.device == kHost ? options_.chunk_bytes : options_.device_chunk_bytes;
  const bool on_device = task.device != kHost, by_mpi = mpi_ != nullptr;
  Descriptor mine = describe_call(task.kind, task.seq, task.args, task.algo, chunk, on_device, by_mpi, task.invalid);
  // The headers travel like the data: shared memory once it is set up (the first host
  // collective is checked over TCP, before the ranks meet to set it up).
  const std::unique_ptr<Link> link = host_link(task, kCheckTag);
  if (!agreement_) agreement_ = std::make_unique<Agreement>();
  Agreement& agreed = *agreement_;
  agree(*link, mine, task.args.send, agreed);
  if (agreed.why.empty() && task.kind == CollKind::kAllToAllV) {
    // Per-peer counts: each pair compares its own, then every rank hears every mismatch.
    mine = describe_call(task.kind, task.seq, task.args, task.algo, chunk, on_device, by_mpi,
                         check_counts(*link, task.send_counts, task.recv_counts));
    agree(*link, mine, nullptr, agreed);
  }
  if (!agreed.why.empty()) throw CollectiveError(fmt::format("{}: {}", where(task), agreed.why));
  // What every peer sends this rank came in or behind its header: the call is done but for the
  // sum or the copies into place. Under MPI, MPI runs every host call and nothing rides
  // (data_rides() reads by_mpi).
  if (agreed.bodies.empty()) return false;
  complete_from_check(*link, task.kind, task.args, agreed.bodies, agreed.scratch);
  return true;
}

// Decided once, by the first host collective (every rank runs it, in the same order).
void Communicator::choose_host_path() {
  if (shm_decided_) return;
  std::string why = hosts_.hosts() > 1 ? fmt::format("the ranks are on {} hosts", hosts_.hosts()) : "";
  if (why.empty())
    shm_ = ShmPeers::connect(*transport_, options_.chunk_bytes, options_.shared_memory, options_.shm_stores,
                             options_.shm_link, why);
  shm_decided_ = true;
  if (shm_) {
    // Every rank is on this host. A rank's collective on the worker thread runs beside its
    // caller, who may compute meanwhile: two busy threads a rank then, one otherwise.
    shm_poll_alone_ = options_.shm_poll.value_or(shm_poll_default(world_size_, shm_->cpus()));
    shm_poll_beside_caller_ = options_.shm_poll.value_or(shm_poll_default(2 * world_size_, shm_->cpus()));
  }
  std::lock_guard lock(mutex_);
  host_path_ = !shm_ ? fmt::format("TCP ({})", why)
              : options_.shm_link == ShmLinkKind::kPlain ? "shared memory (the plain link)" : "shared memory";
}

std::unique_ptr<Link> Communicator::host_link(const Task& task, uint64_t tag) {
  if (shm_ && is_collective(task.kind) && options_.shm_link == ShmLinkKind::kPlain)
    return std::make_unique<PlainShmLink>(*shm_, *transport_, task.seq, tag, *host_buffers_);
  if (shm_ && is_collective(task.kind)) {
    // A queued task runs on the worker: it polls long only while a caller waits for it.
    const ShmPoll poll{shm_poll_alone_, shm_poll_beside_caller_, task.state ? callers_waiting_.get() : nullptr};
    return std::make_unique<ShmLink>(*shm_, *transport_, task.seq, tag, poll, *host_buffers_);
  }
  return std::make_unique<HostLink>(*transport_, group_, tag, options_.chunk_bytes, *host_buffers_);
}

}  // namespace ringgrad::collectives
