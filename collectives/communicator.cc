// Communicator: the public calls. Each builds its call's Task (task.h), which judges this rank's
// arguments, and issues it: the algorithm chosen, then the queue (call_queue.h), which runs it
// on the caller's thread or its worker through CallRunner (call_runner.h). Blocking and
// asynchronous forms differ only in issue()'s `blocking`.
#include "collectives/communicator.h"

#include <algorithm>

#include <fmt/format.h>

#include "collectives/backends/device_backend.h"
#include "collectives/backends/mpi_backend.h"
#include "collectives/backends/mpi_bootstrap.h"
#include "collectives/call_queue.h"
#include "collectives/call_runner.h"
#include "collectives/check.h"
#include "collectives/enum_format.h"
#include "collectives/flight_recorder.h"
#include "collectives/task.h"

namespace ringgrad::collectives {
namespace {

const Buffer kNoRecv{};

// Hosts as the cost model sees them: the hosts when each holds as many ranks, else one.
int model_hosts(const HostLayout& hosts) { return hosts.uniform() ? hosts.hosts() : 1; }

// The job's transport. A job of several ranks with no rendezvous address (mpirun without
// MASTER_ADDR and MASTER_PORT) and backend mpi finds rank 0 through MPI (mpi_bootstrap.h).
std::unique_ptr<transport::Transport> join(const transport::Config& config, Backend backend) {
  if (backend == Backend::kMpi && config.world_size > 1 && config.master_port == 0) {
    check_backend(backend, config.rank);  // an MPI build, else say so
    return join_through_mpi(config);
  }
  return std::make_unique<transport::Transport>(config);
}

}  // namespace

// --- Construction ------------------------------------------------------------------------

// A moved-from CommOptions keeps its backend, so join() reads it whichever argument comes first.
Communicator::Communicator(const transport::Config& config, CommOptions options)
    : Communicator(join(config, options.backend), std::move(options)) {}

Communicator::Communicator(std::unique_ptr<transport::Transport> transport, CommOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      group_{0, transport_->rank(), transport_->world_size(), {}, {}},
      hosts_(group_.size > 1 ? HostLayout::from_store(transport_->store(), group_.size) : HostLayout{{0}}),
      algo_choice_(options_.model, options_.algo, group_.size, model_hosts(hosts_)) {
  options_.validate();
  check_backend(options_.backend, rank());
  if (world_size() > 1) agree_on_check(transport_->store(), rank(), world_size(), options_.check_args);
  start(options_.backend == Backend::kMpi ? std::make_unique<MpiBackend>(rank(), world_size()) : nullptr);
}

Communicator::Communicator(std::shared_ptr<transport::Transport> transport, CommOptions options, Group group,
                           HostLayout hosts, std::unique_ptr<MpiBackend> mpi)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      group_(std::move(group)),
      hosts_(std::move(hosts)),
      algo_choice_(options_.model, options_.algo, group_.size, model_hosts(hosts_)) {
  start(std::move(mpi));
}

void Communicator::start(std::unique_ptr<MpiBackend> mpi) {
  recorder_ = std::make_unique<FlightRecorder>(describe_rank(group_), group_.job_rank(group_.rank),
                                               flight_recorder_capacity());
  runner_ = std::make_unique<CallRunner>(transport_, options_, group_, hosts_, std::move(mpi));
  queue_ = std::make_unique<CallQueue>(*runner_, group_, *recorder_);
}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::split(int color, int key, std::string name) {
  // Every rank's color and key, and from rank 0 a stream number no other group of the job has
  // (sibling groups share it: they have no two ranks in common, so no connection carries both).
  int64_t mine[3] = {color, key, 0};
  if (rank() == 0) mine[2] = store().add("ringgrad/group_streams", 1);
  std::vector<int64_t> all(3 * static_cast<std::size_t>(world_size()));
  all_gather(ConstBuffer(mine, 3, DType::kInt64), Buffer(all.data(), all.size(), DType::kInt64));
  MpiBackend* mpi = runner_->mpi();
  std::unique_ptr<MpiBackend> group_mpi = mpi ? mpi->split(color, key) : nullptr;  // every rank takes part
  if (color < 0) return nullptr;
  std::vector<int> ranks;  // parent ranks of my group, in group order
  for (int q = 0; q < world_size(); ++q)
    if (all[3 * static_cast<std::size_t>(q)] == color) ranks.push_back(q);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    return all[3 * static_cast<std::size_t>(a) + 1] < all[3 * static_cast<std::size_t>(b) + 1];
  });
  Group group;
  group.stream = static_cast<uint32_t>(all[2]);
  group.size = static_cast<int>(ranks.size());
  group.rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank()) - ranks.begin());
  for (int q : ranks) group.members.push_back(group_.job_rank(q));
  group.name = name.empty() ? fmt::format("split {} color {}", group.stream, color) : std::move(name);
  return std::unique_ptr<Communicator>(
      new Communicator(transport_, options_, std::move(group), hosts_.subset(ranks), std::move(group_mpi)));
}

void Communicator::set_cost_model(const CostModel& model) {
  options_.model = model;
  algo_choice_.set_model(model);
}

Algo Communicator::resolve(CollKind kind, Algo algo, std::size_t n) const { return algo_choice_.pick(kind, algo, n); }
CommStats Communicator::stats() const { return queue_->stats(); }
void Communicator::reset_stats() { queue_->reset_stats(); }
std::string Communicator::host_path() const { return runner_->host_path(); }

// --- Issuing a call --------------------------------------------------------------------------

Work Communicator::issue(Task&& task, bool blocking) {
  if (task.invalid.empty()) task.algo = algo_choice_.pick(task.kind, task.algo, task.bytes);
  if (task.device != kHost && task.invalid.empty()) {
    int bound = kHost;  // the first device call binds the communicator to its device
    if (!bound_device_.compare_exchange_strong(bound, task.device) && task.device != bound)
      task.invalid = fmt::format("buffers are on cuda:{} but this communicator runs on cuda:{} (its first device "
                                 "call's): one communicator per device", task.device, bound);
  }
  // Without the check no other rank would hear of a bad argument: throw here, before any data moves.
  if (!task.invalid.empty() && (!options_.check_args || !is_collective(task.kind)))
    throw CollectiveError(fmt::format("{} on {}: {}", task.kind, describe_rank(group_), task.invalid));
  return queue_->submit(std::move(task), blocking);
}

// --- The public calls: a Task each, issued blocking or not --------------------------------------

Work Communicator::broadcast_async(ConstBuffer send, Buffer recv, int root, Algo algo) {
  return issue(collective_task(CollKind::kBroadcast, send, recv, ReduceOp::SUM, root, algo, rank(), world_size()), false);
}
Work Communicator::reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo) {
  return issue(collective_task(CollKind::kReduce, send, recv, op, root, algo, rank(), world_size()), false);
}
Work Communicator::all_reduce_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  return issue(collective_task(CollKind::kAllReduce, send, recv, op, -1, algo, rank(), world_size()), false);
}
Work Communicator::all_gather_async(ConstBuffer send, Buffer recv, Algo algo) {
  return issue(collective_task(CollKind::kAllGather, send, recv, ReduceOp::SUM, -1, algo, rank(), world_size()), false);
}
Work Communicator::reduce_scatter_async(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  return issue(collective_task(CollKind::kReduceScatter, send, recv, op, -1, algo, rank(), world_size()), false);
}
Work Communicator::gather_async(ConstBuffer send, Buffer recv, int root, Algo algo) {
  return issue(collective_task(CollKind::kGather, send, recv, ReduceOp::SUM, root, algo, rank(), world_size()), false);
}
Work Communicator::scatter_async(ConstBuffer send, Buffer recv, int root, Algo algo) {
  return issue(collective_task(CollKind::kScatter, send, recv, ReduceOp::SUM, root, algo, rank(), world_size()), false);
}
Work Communicator::all_to_all_async(ConstBuffer send, Buffer recv, Algo algo) {
  return issue(collective_task(CollKind::kAllToAll, send, recv, ReduceOp::SUM, -1, algo, rank(), world_size()), false);
}
Work Communicator::all_to_all_v_async(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                                      std::span<const std::size_t> recv_counts) {
  return issue(all_to_all_v_task(send, send_counts, recv, recv_counts, rank(), world_size()), false);
}
Work Communicator::barrier_async() {
  return issue(collective_task(CollKind::kBarrier, {}, {}, ReduceOp::SUM, -1, Algo::kAuto, rank(), world_size()), false);
}
Work Communicator::send_async(ConstBuffer data, int peer, uint64_t tag) {
  return issue(point_to_point_task(CollKind::kSend, data, kNoRecv, peer, tag, rank(), world_size()), false);
}
Work Communicator::recv_async(Buffer data, int peer, uint64_t tag) {
  return issue(point_to_point_task(CollKind::kRecv, {}, data, peer, tag, rank(), world_size()), false);
}
Work Communicator::batch_isend_irecv(std::vector<P2POp> ops, uint64_t tag) {
  return issue(batch_task(std::move(ops), tag, rank(), world_size()), false);
}

void Communicator::broadcast(ConstBuffer send, Buffer recv, int root, Algo algo) {
  issue(collective_task(CollKind::kBroadcast, send, recv, ReduceOp::SUM, root, algo, rank(), world_size()), true);
}
void Communicator::reduce(ConstBuffer send, Buffer recv, ReduceOp op, int root, Algo algo) {
  issue(collective_task(CollKind::kReduce, send, recv, op, root, algo, rank(), world_size()), true);
}
void Communicator::all_reduce(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  issue(collective_task(CollKind::kAllReduce, send, recv, op, -1, algo, rank(), world_size()), true);
}
void Communicator::all_gather(ConstBuffer send, Buffer recv, Algo algo) {
  issue(collective_task(CollKind::kAllGather, send, recv, ReduceOp::SUM, -1, algo, rank(), world_size()), true);
}
void Communicator::reduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op, Algo algo) {
  issue(collective_task(CollKind::kReduceScatter, send, recv, op, -1, algo, rank(), world_size()), true);
}
void Communicator::gather(ConstBuffer send, Buffer recv, int root, Algo algo) {
  issue(collective_task(CollKind::kGather, send, recv, ReduceOp::SUM, root, algo, rank(), world_size()), true);
}
void Communicator::scatter(ConstBuffer send, Buffer recv, int root, Algo algo) {
  issue(collective_task(CollKind::kScatter, send, recv, ReduceOp::SUM, root, algo, rank(), world_size()), true);
}
void Communicator::all_to_all(ConstBuffer send, Buffer recv, Algo algo) {
  issue(collective_task(CollKind::kAllToAll, send, recv, ReduceOp::SUM, -1, algo, rank(), world_size()), true);
}
void Communicator::all_to_all_v(ConstBuffer send, std::span<const std::size_t> send_counts, Buffer recv,
                                std::span<const std::size_t> recv_counts) {
  issue(all_to_all_v_task(send, send_counts, recv, recv_counts, rank(), world_size()), true);
}
void Communicator::barrier() {
  issue(collective_task(CollKind::kBarrier, {}, {}, ReduceOp::SUM, -1, Algo::kAuto, rank(), world_size()), true);
}
void Communicator::send(ConstBuffer data, int peer, uint64_t tag) {
  issue(point_to_point_task(CollKind::kSend, data, kNoRecv, peer, tag, rank(), world_size()), true);
}
void Communicator::recv(Buffer data, int peer, uint64_t tag) {
  issue(point_to_point_task(CollKind::kRecv, {}, data, peer, tag, rank(), world_size()), true);
}
void Communicator::batch_send_recv(std::vector<P2POp> ops, uint64_t tag) {
  issue(batch_task(std::move(ops), tag, rank(), world_size()), true);
}

}  // namespace ringgrad::collectives
