// ProcessGroupRinggrad: the rendezvous through torch's store, then one method per c10d call,
// each staging its tensors (tensors.h) and issuing one asynchronous Communicator call.
#include <Python.h>  // first, as Python asks: the destructor lets go of the GIL

#include "collectives/torch/process_group.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/sequence_num.hpp>
#include <fmt/format.h>

#include "collectives/torch/tensors.h"
#include "collectives/torch/torch_work.h"
#include "transport/cpus.h"
#include "transport/store_server.h"
#include "transport/transport.h"

namespace ringgrad::torch_backend {
namespace {

using collectives::Buffer;
using collectives::ConstBuffer;
using c10d::OpType;

// Where peers reach rank 0: MASTER_ADDR (torchrun and env:// set it), else this host's name.
std::string this_host() {
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') return addr;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "127.0.0.1";
  return name;
}

// A job id no other group shares: the store server refuses clients of another job.
std::string fresh_job_id() {
  std::random_device random;
  return fmt::format("torch-{:08x}{:08x}", random(), random());
}

// Rank 0's "host port job" under this key of torch's (per-group) store.
constexpr const char* kStoreKey = "ringgrad/store";


// c10d passes one list of outputs (or inputs) per tensor of this process; ringgrad has one.
std::vector<at::Tensor>& only_list(const CallName& what, std::vector<std::vector<at::Tensor>>& lists) {
  TORCH_CHECK(lists.size() == 1, "ringgrad ", what, ": takes one tensor list per process (got ", lists.size(), ")");
  return lists.front();
}

}  // namespace

ProcessGroupRinggrad::ProcessGroupRinggrad(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                           std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size), store_(store) {
  transport::Config config;
  config.rank = rank;
  config.world_size = size;
  config.timeout = timeout;
  config.receive_poll = transport::receive_poll_default(size, static_cast<int>(transport::allowed_cpus().size()));
  std::unique_ptr<transport::StoreServer> server;
  if (rank == 0) {
    config.job_id = fresh_job_id();
    server = std::make_unique<transport::StoreServer>(0, config.job_id);  // a free port, no race for it
    config.master_addr = this_host();
    config.master_port = server->port();
    const std::string where = fmt::format("{} {} {}", config.master_addr, config.master_port, config.job_id);
    store->set(kStoreKey, std::vector<uint8_t>(where.begin(), where.end()));
  } else {
    const std::vector<uint8_t> bytes = store->get(kStoreKey);
    std::istringstream where(std::string(bytes.begin(), bytes.end()));
    where >> config.master_addr >> config.master_port >> config.job_id;
  }
  comm_ = std::make_unique<collectives::Communicator>(std::make_unique<transport::Transport>(config, std::move(server)));
  init();
}

ProcessGroupRinggrad::~ProcessGroupRinggrad() {
  // Python may drop the last reference holding the GIL, while a Future's callback on one of the
  // FutureThreads waits for it: the GIL is let go while the calls end and those threads join.
  PyThreadState* python = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  comm_.reset();            // runs the queued calls to their end
  future_threads_.reset();  // completes their Futures, joins
  if (python != nullptr) PyEval_RestoreThread(python);
}

template <typename Issue>
c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::run(OpType type, const std::vector<at::Tensor>& inputs,
                                                         std::vector<at::Tensor> outputs, std::vector<at::Tensor> buffers,
                                                         std::function<void()> finish, Issue&& issue) {
  auto work = c10::make_intrusive<TorchWork>(rank_, type, inputs, std::move(outputs), std::move(buffers),
                                             std::move(finish), *future_threads_);
  work->start(issue());
  if (sequenceNum_ && !c10d::isP2POp(type)) sequenceNum_->increment();
  return work;
}

// --- One tensor in place -------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::broadcast(std::vector<at::Tensor>& tensors,
                                                               const c10d::BroadcastOptions& opts) {
  const CallName what{"broadcast", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const Buffer b = moved(t.data);
  return run(OpType::BROADCAST, {t.user}, {t.user}, {t.data}, [t] { t.copy_back(); },
             [&] { return comm_->broadcast_async(b, b, static_cast<int>(opts.rootRank)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::allreduce(std::vector<at::Tensor>& tensors,
                                                               const c10d::AllreduceOptions& opts) {
  const CallName what{"allreduce", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const Reduction r = reduction(what, opts.reduceOp, t.data.scalar_type());
  const Buffer b = reduced(t.data, r);
  return run(OpType::ALLREDUCE, {t.user}, {t.user}, {t.data}, [t] { t.copy_back(); },
             [&] { return comm_->all_reduce_async(b, b, r.op); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                         const c10d::AllreduceCoalescedOptions& opts) {
  const CallName what{"allreduce_coalesced", rank_, size_};
  TORCH_CHECK(!tensors.empty(), "ringgrad ", what, ": no tensors");
  const at::Tensor flat = flatten(what, tensors);
  const Reduction r = reduction(what, opts.reduceOp, flat.scalar_type());
  const Buffer b = reduced(flat, r);
  return run(OpType::ALLREDUCE_COALESCED, tensors, tensors, {flat}, [flat, tensors] { unflatten(flat, tensors); },
             [&] { return comm_->all_reduce_async(b, b, r.op); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::reduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::ReduceOptions& opts) {
  const CallName what{"reduce", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const Reduction r = reduction(what, opts.reduceOp, t.data.scalar_type());
  const Buffer b = reduced(t.data, r);
  return run(OpType::REDUCE, {t.user}, {t.user}, {t.data}, [t] { t.copy_back(); },
             [&] { return comm_->reduce_async(b, b, r.op, static_cast<int>(opts.rootRank)); });
}

// --- Gathers: one block per rank -------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const c10d::AllgatherOptions&) {
  const CallName what{"allgather", rank_, size_};
  const Staged in = stage(what, only(what, inputs));
  std::vector<at::Tensor>& outs = only_list(what, outputs);
  TORCH_CHECK(outs.size() == static_cast<std::size_t>(size_), "ringgrad ", what, ": ", outs.size(),
              " output tensors; one per rank (", size_, ") expected");
  check_like(what, "output", outs, in.user);
  for (const at::Tensor& o : outs) check_cpu(what, o);
  const at::Tensor flat = at::empty({size_ * in.data.numel()}, in.data.options());
  return run(OpType::ALLGATHER, {in.user}, outs, {in.data, flat}, [flat, outs] { unflatten(flat, outs); },
             [&] { return comm_->all_gather_async(moved(in.data), moved(flat)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                     const c10d::AllgatherOptions&) {
  const CallName what{"_allgather_base", rank_, size_};
  const Staged in = stage(what, input), out = stage(what, output);
  return run(OpType::_ALLGATHER_BASE, {in.user}, {out.user}, {in.data, out.data}, [out] { out.copy_back(); },
             [&] { return comm_->all_gather_async(moved(in.data), moved(out.data)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                         std::vector<at::Tensor>& inputs,
                                                                         const c10d::AllgatherOptions&) {
  const CallName what{"allgather_coalesced", rank_, size_};
  TORCH_CHECK(!inputs.empty(), "ringgrad ", what, ": no input tensors");
  TORCH_CHECK(outputs.size() == static_cast<std::size_t>(size_), "ringgrad ", what, ": ", outputs.size(),
              " output lists; one per rank (", size_, ") expected");
  for (const std::vector<at::Tensor>& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(), "ringgrad ", what, ": an output list holds ", list.size(),
                " tensors; one per input (", inputs.size(), ") expected");
    for (std::size_t i = 0; i < list.size(); ++i) check_like(what, "output", {list[i]}, inputs[i]);
  }
  const at::Tensor flat_in = flatten(what, inputs);
  const at::Tensor flat_out = at::empty({size_ * flat_in.numel()}, flat_in.options());
  auto finish = [flat_out, outputs, n = flat_in.numel()] {
    for (std::size_t q = 0; q < outputs.size(); ++q) unflatten(flat_out.narrow(0, static_cast<int64_t>(q) * n, n), outputs[q]);
  };
  std::vector<at::Tensor> all;
  for (const auto& list : outputs) all.insert(all.end(), list.begin(), list.end());
  return run(OpType::ALLGATHER_COALESCED, inputs, all, {flat_in, flat_out}, finish,
             [&] { return comm_->all_gather_async(moved(flat_in), moved(flat_out)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  const CallName what{"gather", rank_, size_};
  const int root = static_cast<int>(opts.rootRank);
  const Staged in = stage(what, only(what, inputs));
  if (rank_ != root) {
    TORCH_CHECK(outputs.empty(), "ringgrad ", what, ": only the root (rank ", root, ") takes output tensors");
    const Buffer none{nullptr, 0, moved(in.data).dtype};
    return run(OpType::GATHER, {in.user}, {}, {in.data}, nullptr, [&] { return comm_->gather_async(moved(in.data), none, root); });
  }
  std::vector<at::Tensor>& outs = only_list(what, outputs);
  TORCH_CHECK(outs.size() == static_cast<std::size_t>(size_), "ringgrad ", what, ": ", outs.size(),
              " output tensors; one per rank (", size_, ") expected");
  check_like(what, "output", outs, in.user);
  for (const at::Tensor& o : outs) check_cpu(what, o);
  const at::Tensor flat = at::empty({size_ * in.data.numel()}, in.data.options());
  return run(OpType::GATHER, {in.user}, outs, {in.data, flat}, [flat, outs] { unflatten(flat, outs); },
             [&] { return comm_->gather_async(moved(in.data), moved(flat), root); });
}

// --- Scatters: one block per rank ------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::scatter(std::vector<at::Tensor>& outputs,
                                                             std::vector<std::vector<at::Tensor>>& inputs,
                                                             const c10d::ScatterOptions& opts) {
  const CallName what{"scatter", rank_, size_};
  const int root = static_cast<int>(opts.rootRank);
  const Staged out = stage(what, only(what, outputs));
  if (rank_ != root) {
    TORCH_CHECK(inputs.empty(), "ringgrad ", what, ": only the root (rank ", root, ") takes input tensors");
    const ConstBuffer none{nullptr, 0, moved(out.data).dtype};
    return run(OpType::SCATTER, {}, {out.user}, {out.data}, [out] { out.copy_back(); },
               [&] { return comm_->scatter_async(none, moved(out.data), root); });
  }
  std::vector<at::Tensor>& ins = only_list(what, inputs);
  TORCH_CHECK(ins.size() == static_cast<std::size_t>(size_), "ringgrad ", what, ": ", ins.size(),
              " input tensors; one per rank (", size_, ") expected");
  check_like(what, "input", ins, out.user);
  const at::Tensor flat = flatten(what, ins);
  return run(OpType::SCATTER, ins, {out.user}, {flat, out.data}, [out] { out.copy_back(); },
             [&] { return comm_->scatter_async(moved(flat), moved(out.data), root); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                                    const c10d::ReduceScatterOptions& opts) {
  const CallName what{"reduce_scatter", rank_, size_};
  const Staged out = stage(what, only(what, outputs));
  std::vector<at::Tensor>& ins = only_list(what, inputs);
  TORCH_CHECK(ins.size() == static_cast<std::size_t>(size_), "ringgrad ", what, ": ", ins.size(),
              " input tensors; one per rank (", size_, ") expected");
  check_like(what, "input", ins, out.user);
  const at::Tensor flat = flatten(what, ins);
  const Reduction r = reduction(what, opts.reduceOp, flat.scalar_type());
  return run(OpType::REDUCE_SCATTER, ins, {out.user}, {flat, out.data}, [out] { out.copy_back(); },
             [&] { return comm_->reduce_scatter_async(reduced(flat, r), reduced(out.data, r), r.op); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                          const c10d::ReduceScatterOptions& opts) {
  const CallName what{"_reduce_scatter_base", rank_, size_};
  const Staged in = stage(what, input), out = stage(what, output);
  const Reduction r = reduction(what, opts.reduceOp, in.data.scalar_type());
  return run(OpType::_REDUCE_SCATTER_BASE, {in.user}, {out.user}, {in.data, out.data}, [out] { out.copy_back(); },
             [&] { return comm_->reduce_scatter_async(reduced(in.data, r), reduced(out.data, r), r.op); });
}

// --- All to all --------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                   std::vector<int64_t>& output_split_sizes,
                                                                   std::vector<int64_t>& input_split_sizes,
                                                                   const c10d::AllToAllOptions&) {
  const CallName what{"alltoall_base", rank_, size_};
  const Staged in = stage(what, input), out = stage(what, output);
  if (output_split_sizes.empty() && input_split_sizes.empty())
    return run(OpType::ALLTOALL_BASE, {in.user}, {out.user}, {in.data, out.data}, [out] { out.copy_back(); },
               [&] { return comm_->all_to_all_async(moved(in.data), moved(out.data)); });
  // Split sizes count rows (slices along dim 0); ringgrad counts elements of the moved dtype.
  auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* role) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const std::size_t per_row = rows == 0 ? 0 : static_cast<std::size_t>(t.numel() / rows) * moved_units(t.scalar_type());
    TORCH_CHECK(splits.empty() || splits.size() == static_cast<std::size_t>(size_), "ringgrad ", what, ": ", splits.size(),
                " ", role, " split sizes; one per rank (", size_, ") expected");
    TORCH_CHECK(!splits.empty() || rows % size_ == 0, "ringgrad ", what, ": the ", role, " has ", rows,
                " rows, not a multiple of the world size ", size_, " (give split sizes)");
    std::vector<std::size_t> n(static_cast<std::size_t>(size_));
    for (std::size_t q = 0; q < n.size(); ++q) {
      const int64_t split = splits.empty() ? rows / size_ : splits[q];
      TORCH_CHECK(split >= 0, "ringgrad ", what, ": ", role, " split size ", split, " for rank ", q, " is negative");
      n[q] = static_cast<std::size_t>(split) * per_row;
    }
    return n;
  };
  const std::vector<std::size_t> send_counts = counts(in.data, input_split_sizes, "input");
  const std::vector<std::size_t> recv_counts = counts(out.data, output_split_sizes, "output");
  return run(OpType::ALLTOALL_BASE, {in.user}, {out.user}, {in.data, out.data}, [out] { out.copy_back(); }, [&] {
    return comm_->all_to_all_v_async(moved(in.data), send_counts, moved(out.data), recv_counts);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::alltoall(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::AllToAllOptions&) {
  const CallName what{"alltoall", rank_, size_};
  TORCH_CHECK(inputs.size() == static_cast<std::size_t>(size_) && outputs.size() == inputs.size(), "ringgrad ", what,
              ": ", inputs.size(), " input and ", outputs.size(), " output tensors; one each per rank (", size_,
              ") expected");
  const at::Tensor flat_in = flatten(what, inputs);
  std::vector<std::size_t> send_counts, recv_counts;
  int64_t recv_total = 0;
  for (std::size_t q = 0; q < inputs.size(); ++q) {
    TORCH_CHECK(outputs[q].scalar_type() == flat_in.scalar_type(), "ringgrad ", what, ": output tensor ", q, " is ",
                outputs[q].scalar_type(), ", the inputs are ", flat_in.scalar_type());
    check_cpu(what, outputs[q]);
    const std::size_t units = moved_units(flat_in.scalar_type());
    send_counts.push_back(static_cast<std::size_t>(inputs[q].numel()) * units);
    recv_counts.push_back(static_cast<std::size_t>(outputs[q].numel()) * units);
    recv_total += outputs[q].numel();
  }
  const at::Tensor flat_out = at::empty({recv_total}, flat_in.options());
  return run(OpType::ALLTOALL, inputs, outputs, {flat_in, flat_out}, [flat_out, outputs] { unflatten(flat_out, outputs); }, [&] {
    return comm_->all_to_all_v_async(moved(flat_in), send_counts, moved(flat_out), recv_counts);
  });
}

// --- Point to point ------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  const CallName what{"send", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const uint64_t wire_tag = static_cast<uint32_t>(tag);
  if (coalescing_) {
    batch_.push_back(collectives::P2POp::send(moved(t.data), dst));
    batch_tags_.push_back(wire_tag);
    return batch_works_.emplace_back(
        c10::make_intrusive<TorchWork>(rank_, OpType::SEND, std::vector{t.user}, std::vector{t.user},
                                       std::vector{t.data}, nullptr, *future_threads_));
  }
  return run(OpType::SEND, {t.user}, {t.user}, {t.data}, nullptr, [&] { return comm_->send_async(moved(t.data), dst, wire_tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  const CallName what{"recv", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const uint64_t wire_tag = static_cast<uint32_t>(tag);
  if (coalescing_) {
    batch_.push_back(collectives::P2POp::recv(moved(t.data), src));
    batch_tags_.push_back(wire_tag);
    return batch_works_.emplace_back(
        c10::make_intrusive<TorchWork>(rank_, OpType::RECV, std::vector{t.user}, std::vector{t.user},
                                       std::vector{t.data}, [t] { t.copy_back(); }, *future_threads_));
  }
  return run(OpType::RECV, {t.user}, {t.user}, {t.data}, [t] { t.copy_back(); },
             [&] { return comm_->recv_async(moved(t.data), src, wire_tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "ringgrad ", CallName{"recv", rank_, size_}, ": receiving from any source is not supported; name the source rank");
}

void ProcessGroupRinggrad::startCoalescing() { coalescing_ = true; }

// One ringgrad batch per tag (a batch matches its peers' by one tag), in increasing tag order on
// every rank: batch t waits only on the peers' batches of tag t, which every rank reaches after
// finishing those of smaller tags, so the batches cannot wait on one another in a cycle.
void ProcessGroupRinggrad::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  coalescing_ = false;
  std::map<uint64_t, std::vector<std::size_t>> by_tag;  // op indices of each tag, in issue order
  for (std::size_t i = 0; i < batch_.size(); ++i) by_tag[batch_tags_[i]].push_back(i);
  for (const auto& [tag, indices] : by_tag) {
    std::vector<collectives::P2POp> ops;
    for (std::size_t i : indices) ops.push_back(batch_[i]);
    const collectives::Work batch = comm_->batch_isend_irecv(std::move(ops), tag);
    for (std::size_t i : indices) batch_works_[i]->start(batch);
  }
  batch_.clear();
  batch_tags_.clear();
  batch_works_.clear();
}

void ProcessGroupRinggrad::setSequenceNumberForGroup() {
  constexpr int kBytes = sizeof(uint64_t);
  if (rank_ == 0) {
    const uint64_t start = 1 + std::random_device{}();
    sequenceNum_ = c10d::SequenceNum(start);
    store_->set(c10d::kSeqNumStoreKey, c10d::toVec<uint8_t>(start, kBytes));
  } else {
    sequenceNum_ = c10d::SequenceNum(c10d::fromVec<uint8_t>(store_->get(c10d::kSeqNumStoreKey)));
  }
}

uint64_t ProcessGroupRinggrad::getSequenceNumberForGroup() { return sequenceNum_ ? sequenceNum_->get() : 0; }

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::barrier(const c10d::BarrierOptions&) {
  return run(OpType::BARRIER, {}, {}, {}, nullptr, [&] { return comm_->barrier_async(); });
}

}  // namespace ringgrad::torch_backend
