// ProcessGroupRinggrad's pairwise exchanges: all-to-all (with split sizes, as one all_to_all_v),
// send and recv with c10d's tags, the sends and receives of batch_isend_irecv gathered between
// startCoalescing and endCoalescing into one ringgrad batch, and barrier.
#include "collectives/torch/process_group.h"

#include <ATen/ATen.h>

#include "collectives/torch/tensors.h"
#include "collectives/torch/torch_work.h"

namespace ringgrad::torch_backend {

using c10d::OpType;

// --- All to all --------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                   std::vector<int64_t>& output_split_sizes,
                                                                   std::vector<int64_t>& input_split_sizes,
                                                                   const c10d::AllToAllOptions&) {
  const CallName what{"alltoall_base", rank_, size_};
  const Staged in = stage(what, input), out = stage(what, output);
  if (output_split_sizes.empty() && input_split_sizes.empty())
    return run(OpType::ALLTOALL_BASE, {out.user}, {in.data, out.data}, [out] { out.copy_back(); },
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
  return run(OpType::ALLTOALL_BASE, {out.user}, {in.data, out.data}, [out] { out.copy_back(); }, [&] {
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
  return run(OpType::ALLTOALL, outputs, {flat_in, flat_out}, [flat_out, outputs] { unflatten(flat_out, outputs); }, [&] {
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
        c10::make_intrusive<TorchWork>(rank_, OpType::SEND, std::vector{t.user}, std::vector{t.data}, nullptr, *future_threads_));
  }
  return run(OpType::SEND, {t.user}, {t.data}, nullptr, [&] { return comm_->send_async(moved(t.data), dst, wire_tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  const CallName what{"recv", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const uint64_t wire_tag = static_cast<uint32_t>(tag);
  if (coalescing_) {
    batch_.push_back(collectives::P2POp::recv(moved(t.data), src));
    batch_tags_.push_back(wire_tag);
    return batch_works_.emplace_back(
        c10::make_intrusive<TorchWork>(rank_, OpType::RECV, std::vector{t.user}, std::vector{t.data},
                                       [t] { t.copy_back(); }, *future_threads_));
  }
  return run(OpType::RECV, {t.user}, {t.data}, [t] { t.copy_back(); },
             [&] { return comm_->recv_async(moved(t.data), src, wire_tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "ringgrad ", CallName{"recv", rank_, size_}, ": receiving from any source is not supported; name the source rank");
}

void ProcessGroupRinggrad::startCoalescing() { coalescing_ = true; }

void ProcessGroupRinggrad::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  coalescing_ = false;
  std::vector<collectives::P2POp> ops = std::move(batch_);
  std::vector<uint64_t> tags = std::move(batch_tags_);
  std::vector<c10::intrusive_ptr<TorchWork>> works = std::move(batch_works_);
  batch_.clear();
  batch_tags_.clear();
  batch_works_.clear();
  if (ops.empty()) return;
  for (uint64_t tag : tags)
    TORCH_CHECK(tag == tags.front(), "ringgrad ", CallName{"batch_isend_irecv", rank_, size_}, ": its sends and receives carry tags ",
                tags.front(), " and ", tag, "; one batch takes one tag");
  const collectives::Work batch = comm_->batch_isend_irecv(std::move(ops), tags.front());
  for (const auto& work : works) work->start(batch);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::barrier(const c10d::BarrierOptions&) {
  return run(OpType::BARRIER, {}, {}, nullptr, [&] { return comm_->barrier_async(); });
}

}  // namespace ringgrad::torch_backend
