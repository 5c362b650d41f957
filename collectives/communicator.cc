// Communicator: issue order -> sequence numbers, a queue run by one worker thread (or inline
// for a blocking call when nothing is queued: no thread hand-off on the latency path), argument
// validation, and the dispatch from (collective, algorithm) to the algorithm files.
#include "collectives/communicator.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "collectives/algorithms.h"
#include "collectives/check.h"
#include "collectives/device_backend.h"
#include "collectives/device_check.h"
#include "collectives/host_link.h"
#include "collectives/shm_link.h"
#include "collectives/shm_peers.h"

namespace ringgrad::collectives {

struct Work::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

struct Communicator::Task {
  CollKind kind;
  Algo algo = Algo::kAuto;  // resolved: never kAuto for a collective that has algorithms
  CollArgs args{};
  int device = kHost;  // where this rank's buffers are
  int peer = -1;
  uint64_t tag = 0;
  uint64_t seq = 0;
  std::string invalid;  // why this rank's arguments are unusable, or empty
  std::shared_ptr<Work::State> state;
};

namespace {

constexpr uint64_t kP2PTagBit = uint64_t{1} << 63;

bool is_collective(CollKind kind) { return kind != CollKind::kSend && kind != CollKind::kRecv; }

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  // Digits only: strtoull alone would take "-8" (as 2^64 - 8) and a leading space or '+'.
  if (std::strspn(v, "0123456789") != std::strlen(v))
    throw std::invalid_argument(fmt::format("{}='{}' is not a whole number", name, v));
  errno = 0;
  const unsigned long long x = std::strtoull(v, nullptr, 10);
  if (errno == ERANGE) throw std::invalid_argument(fmt::format("{}={} is too large", name, v));
  return static_cast<std::size_t>(x);
}

// Pieces below 4 KiB cost more in per-piece work than they move, and the argument check's
// 240-byte descriptor must fit a shared-memory inbox; above 1 GiB an inbox would not fit memory.
constexpr std::size_t kMinChunk = 4 << 10, kMaxChunk = std::size_t{1} << 30;

void check_chunk(const char* what, std::size_t bytes) {
  if (bytes < kMinChunk || bytes > kMaxChunk || bytes % 8 != 0)
    throw std::invalid_argument(fmt::format("{}={} must be a multiple of 8 from {} to {}", what, bytes, kMinChunk, kMaxChunk));
}

void complete(Work::State& state, std::exception_ptr error) {
  {
    std::lock_guard lock(state.mutex);
    state.done = true;
    state.error = std::move(error);
  }
  state.cv.notify_all();
}

}  // namespace

CommOptions CommOptions::from_env() {
  CommOptions o;
  o.check_args = env_size("RINGGRAD_CHECK", 1) != 0;
  if (const char* a = std::getenv("RINGGRAD_ALGO"); a != nullptr && *a != '\0') o.algo = parse_algo(a);
  o.chunk_bytes = env_size("RINGGRAD_CHUNK_BYTES", o.chunk_bytes);
  check_chunk("RINGGRAD_CHUNK_BYTES", o.chunk_bytes);
  o.model.chunk_bytes = o.chunk_bytes;
  if (const char* b = std::getenv("RINGGRAD_BACKEND"); b != nullptr && *b != '\0') {
    try {
      o.backend = parse_backend(b);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("RINGGRAD_BACKEND: {}", e.what()));
    }
  }
  o.shared_memory = env_size("RINGGRAD_SHM", 1) != 0;
  if (const char* v = std::getenv("RINGGRAD_SHM_POLL_US"); v != nullptr && *v != '\0') {
    const std::size_t us = env_size("RINGGRAD_SHM_POLL_US", 0);
    if (us > 1'000'000) throw std::invalid_argument(fmt::format("RINGGRAD_SHM_POLL_US={} must be from 0 to 1000000 (1 s)", us));
    o.shm_poll = std::chrono::microseconds(us);
  }
  o.device_chunk_bytes = env_size("RINGGRAD_DEVICE_CHUNK_BYTES", o.device_chunk_bytes);
  check_chunk("RINGGRAD_DEVICE_CHUNK_BYTES", o.device_chunk_bytes);
  return o;
}

void Work::wait() {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Work::completed() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

Communicator::Communicator(const transport::Config& config, CommOptions options)
    : Communicator(std::make_unique<transport::Transport>(config), std::move(options)) {}

Communicator::Communicator(std::unique_ptr<transport::Transport> transport, CommOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      rank_(transport_->rank()),
      world_size_(transport_->world_size()) {
  check_chunk("chunk_bytes", options_.chunk_bytes);
  check_chunk("device_chunk_bytes", options_.device_chunk_bytes);
  check_backend(options_.backend, rank_);
  worker_ = std::thread([this] { worker_loop(); });
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
}

Algo Communicator::resolve(CollKind kind, Algo algo, std::size_t n) const {
  if (algo != Algo::kAuto) return algo;
  if (has_algo(kind, options_.algo)) return options_.algo;
  if (!has_algo(kind, Algo::kRing)) return Algo::kAuto;  // barrier, send, recv
  std::lock_guard lock(mutex_);
  return options_.model.choose(kind, n, world_size_);
}

void Communicator::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return (!queue_.empty() && !running_) || (stop_ && queue_.empty() && !running_); });
    if (queue_.empty()) return;
    std::unique_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    execute(*task);
    lock.lock();
    running_ = false;
    cv_.notify_all();
  }
}

Work Communicator::submit(Task task, bool blocking) {
  auto state = std::make_shared<Work::State>();
  task.state = state;
  std::unique_lock lock(mutex_);
  if (!broken_.empty())
    throw transport::TransportError(fmt::format("{} on rank {}: the communicator is broken by an earlier error: {}",
                                                coll_name(task.kind), rank_, broken_));
  if (task.device != kHost && task.invalid.empty()) {
    if (bound_device_ == kHost) bound_device_ = task.device;
    if (task.device != bound_device_)
      task.invalid = fmt::format("buffers are on cuda:{} but this communicator runs on cuda:{} (its first device "
                                 "call's): one communicator per device", task.device, bound_device_);
  }
  if (!task.invalid.empty() && (!options_.check_args || !is_collective(task.kind)))
    throw CollectiveError(fmt::format("{} on rank {}: {}", coll_name(task.kind), rank_, task.invalid));
  if (is_collective(task.kind)) task.seq = next_seq_++;
  if (blocking && queue_.empty() && !running_) {
    running_ = true;  // run on the caller's thread: no hand-off to the worker and back
    lock.unlock();
    execute(task);
    lock.lock();
    running_ = false;
    cv_.notify_all();
    lock.unlock();
    Work(state).wait();
    return Work();
  }
  queue_.push_back(std::make_unique<Task>(std::move(task)));
  lock.unlock();
  cv_.notify_all();
  Work work(state);
  if (blocking) work.wait();
  return work;
}

void Communicator::execute(Task& task) {
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    if (!broken_.empty())
      error = std::make_exception_ptr(transport::TransportError(fmt::format(
          "{} on rank {}: the communicator is broken by an earlier error: {}", coll_name(task.kind), rank_, broken_)));
  }
  if (!error) {
    try {
      check_agreement(task);
      const uint64_t tag = is_collective(task.kind) ? task.seq : kP2PTagBit | task.tag;
      if (task.device == kHost && is_collective(task.kind) && world_size_ > 1) choose_host_path();
      if (task.device == kHost) {
        run_collective(*host_link(tag, is_collective(task.kind)), task.kind, task.algo, task.args, task.peer);
      } else {
        if (!device_) device_ = make_device_backend(*transport_, options_, task.device);
        device_->run(task.kind, task.algo, task.args, task.peer, tag);
      }
    } catch (const CollectiveError&) {
      error = std::current_exception();  // found before any data moved: still usable
    } catch (const std::exception& e) {
      error = std::current_exception();
      std::lock_guard lock(mutex_);
      broken_ = e.what();
      if (shm_) shm_->abort(rank_);  // peers asleep on shared memory wake and fail now
      // Abort: closing every connection makes the peers fail now instead of at their timeout
      // (and lets rank 0's transport leave without waiting for peers blocked on it).
      transport_->abort(e.what());
      transport_.reset();
      // Leaked on purpose: freeing device memory waits for the device, and our stream may wait
      // forever on an event of the dead peer. A broken communicator's process is about to end.
      static_cast<void>(device_.release());
    }
  }
  complete(*task.state, error);
}

std::unique_ptr<Link> Communicator::host_link(uint64_t tag, bool collective) {
  if (shm_ && collective) return std::make_unique<ShmLink>(*shm_, *transport_, tag, shm_poll_);
  return std::make_unique<HostLink>(*transport_, tag, options_.chunk_bytes, scratch_);
}

// Decided once, by the first host collective (every rank runs it, in the same order).
void Communicator::choose_host_path() {
  if (shm_decided_) return;
  std::string why;
  shm_ = ShmPeers::connect(*transport_, options_.chunk_bytes, options_.shared_memory, why);
  shm_decided_ = true;
  if (shm_) shm_poll_ = options_.shm_poll.value_or(shm_poll_default(world_size_, shm_->cpus()));
  std::lock_guard lock(mutex_);
  host_path_ = shm_ ? "shared memory" : fmt::format("TCP ({})", why);
}

std::string Communicator::host_path() const {
  std::lock_guard lock(mutex_);
  return host_path_;
}

void Communicator::check_agreement(const Task& task) {
  if (!is_collective(task.kind) || !options_.check_args) return;
  const std::size_t chunk = task.device == kHost ? options_.chunk_bytes : options_.device_chunk_bytes;
  Descriptor mine = describe_call(task.kind, task.seq, task.args, task.algo, chunk, task.device != kHost, task.invalid);
  // The descriptors travel like the data: shared memory once it is set up (the first host
  // collective is checked over TCP, before the ranks meet to set it up).
  std::vector<Descriptor> all = exchange_descriptors(*host_link(kCheckTag, true), mine);
  if (std::string why = find_disagreement(all); !why.empty())
    throw CollectiveError(fmt::format("{} #{} on rank {}: {}", coll_name(task.kind), task.seq, rank_, why));
}

// --- The public calls: build a Task (validating it), then submit it. -------------------------

namespace {

// A collective's Task: count and dtype by NCCL's convention, the algorithm resolved, and this
// rank's validation error (reported on every rank by the check, or thrown here without it).
Communicator::Task collective(const Communicator& comm, CollKind kind, ConstBuffer send, Buffer recv,
                              ReduceOp op, int root, Algo algo) {
  Communicator::Task t{};
  t.kind = kind;
  const int p = comm.world_size();
  const bool count_from_recv = kind == CollKind::kBroadcast || kind == CollKind::kReduceScatter;
  const std::size_t count = count_from_recv ? recv.count : send.count;
  const DType dtype = count_from_recv ? recv.dtype : send.dtype;
  t.args = CollArgs{static_cast<const std::byte*>(send.data), static_cast<std::byte*>(recv.data), count, dtype, op, root};
  t.invalid = validate(kind, send, recv, root, comm.rank(), p);
  t.device = call_device(kind, send, recv, root, comm.rank());
  if (algo != Algo::kAuto && !has_algo(kind, algo) && kind != CollKind::kBarrier)
    t.invalid = fmt::format("{} has no '{}' algorithm (it has: ring{})", coll_name(kind), algo_name(algo),
                            kind == CollKind::kAllReduce ? ", tree, hd" : has_algo(kind, Algo::kTree) ? ", tree" : "");
  const bool per_rank = kind == CollKind::kAllGather || kind == CollKind::kReduceScatter;
  const std::size_t n = count * dtype_size(dtype) * (per_rank ? static_cast<std::size_t>(p) : 1);
  t.algo = t.invalid.empty() ? comm.resolve(kind, algo, n) : Algo::kAuto;
  return t;
}

Communicator::Task point_to_point(const Communicator& comm, CollKind kind, ConstBuffer send, Buffer recv, int peer,
                                  uint64_t tag) {
  Communicator::Task t{};
  t.kind = kind;
  const bool is_send = kind == CollKind::kSend;
  t.args = CollArgs{static_cast<const std::byte*>(send.data), static_cast<std::byte*>(recv.data),
                    is_send ? send.count : recv.count, is_send ? send.dtype : recv.dtype, ReduceOp::SUM, -1};
  t.peer = peer;
  t.tag = tag & ~(uint64_t{3} << 62);
  t.device = is_send ? send.device : recv.device;
  if (peer < 0 || peer >= comm.world_size() || peer == comm.rank())
    t.invalid = fmt::format("peer {} is not another rank of this world of {}", peer, comm.world_size());
  else if (auto stride = is_send ? send.stride : recv.stride; stride != 1)
    t.invalid = fmt::format("buffer is not contiguous (stride {} elements); make a contiguous copy first", stride);
  else
    t.invalid = is_send ? check_memory("send", send.data, send.count, send.device)
                        : check_memory("recv", recv.data, recv.count, recv.device);
  return t;
}

const Buffer kNoRecv{};

}  // namespace

Work Communicator::broadcast_async(ConstBuffer send, Buffer recv, int root, Algo algo) {
  return submit(collective(*this, CollKind::kBroadcast, send, recv, ReduceOp::SUM, root, algo), false);
}
Work Communicator::reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo) {
  return submit(collective(*this, CollKind::kReduce, send, recv, op, root, algo), false);
}
Work Communicator::all_reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  return submit(collective(*this, CollKind::kAllReduce, send, recv, op, -1, algo), false);
}
Work Communicator::all_gather_async(ConstBuffer send, Buffer recv, Algo algo) {
  return submit(collective(*this, CollKind::kAllGather, send, recv, ReduceOp::SUM, -1, algo), false);
}
Work Communicator::reduce_scatter_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  return submit(collective(*this, CollKind::kReduceScatter, send, recv, op, -1, algo), false);
}
Work Communicator::barrier_async() {
  return submit(collective(*this, CollKind::kBarrier, {}, {}, ReduceOp::SUM, -1, Algo::kAuto), false);
}
Work Communicator::send_async(ConstBuffer data, int peer, uint64_t tag) {
  return submit(point_to_point(*this, CollKind::kSend, data, kNoRecv, peer, tag), false);
}
Work Communicator::recv_async(Buffer data, int peer, uint64_t tag) {
  return submit(point_to_point(*this, CollKind::kRecv, {}, data, peer, tag), false);
}

void Communicator::broadcast(ConstBuffer send, Buffer recv, int root, Algo algo) {
  submit(collective(*this, CollKind::kBroadcast, send, recv, ReduceOp::SUM, root, algo), true);
}
void Communicator::reduce(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo) {
  submit(collective(*this, CollKind::kReduce, send, recv, op, root, algo), true);
}
void Communicator::all_reduce(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  submit(collective(*this, CollKind::kAllReduce, send, recv, op, -1, algo), true);
}
void Communicator::all_gather(ConstBuffer send, Buffer recv, Algo algo) {
  submit(collective(*this, CollKind::kAllGather, send, recv, ReduceOp::SUM, -1, algo), true);
}
void Communicator::reduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  submit(collective(*this, CollKind::kReduceScatter, send, recv, op, -1, algo), true);
}
void Communicator::barrier() { submit(collective(*this, CollKind::kBarrier, {}, {}, ReduceOp::SUM, -1, Algo::kAuto), true); }
void Communicator::send(ConstBuffer data, int peer, uint64_t tag) {
  submit(point_to_point(*this, CollKind::kSend, data, kNoRecv, peer, tag), true);
}
void Communicator::recv(Buffer data, int peer, uint64_t tag) {
  submit(point_to_point(*this, CollKind::kRecv, {}, data, peer, tag), true);
}

}  // namespace ringgrad::collectives
