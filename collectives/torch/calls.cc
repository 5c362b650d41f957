// ProcessGroupRinggrad's collectives: each checks and stages its tensors (tensors.h), then
// issues one asynchronous Communicator call through run(), lists laid end to end in one buffer.
#include "collectives/torch/process_group.h"

#include <ATen/ATen.h>

#include "collectives/torch/tensors.h"

namespace ringgrad::torch_backend {
namespace {

using collectives::Buffer;
using collectives::ConstBuffer;
using c10d::OpType;

// c10d passes one list of outputs (or inputs) per tensor of this process; ringgrad has one.
std::vector<at::Tensor>& only_list(const CallName& what, std::vector<std::vector<at::Tensor>>& lists) {
  TORCH_CHECK(lists.size() == 1, "ringgrad ", what, ": takes one tensor list per process (got ", lists.size(), ")");
  return lists.front();
}

}  // namespace

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

}  // namespace ringgrad::torch_backend
