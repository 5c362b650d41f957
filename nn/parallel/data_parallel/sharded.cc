// ZeRO's and FSDP's shared machinery: shard sizes, reduce-scatter of gradients to the owners,
// all-gather of shards back to full tensors, and the norm and checkpoints of a sharded state.
#include "nn/parallel/data_parallel/sharded.h"

#include "nn/parallel/tensor_buffer.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

void ShardedDataParallel::plan_shards() {
  const std::int64_t world = comm_.world_size();
  for (const Tensor& p : params_) shard_numel_.push_back((p.numel() + world - 1) / world);
}

void ShardedDataParallel::rebuild_optimizer(const std::vector<Tensor>& shards, const OptimizerFactory& make_optimizer) {
  std::vector<ParamGroup> groups;
  for (const auto& group : groups_) groups.push_back({{}, group.weight_decay});
  for (std::size_t i = 0; i < params_.size(); ++i) groups[slot_[i].first].params.push_back(shards[i]);
  optimizer_ = make_optimizer(std::move(groups));
}

void ShardedDataParallel::reduce_scatter_gradient(std::size_t i) {
  const Tensor& p = params_[i];
  Tensor send = Tensor::zeros({padded_numel(i)}, p.dtype(), p.device());
  if (p.grad().defined()) kernels::copy_(kernels::narrow(send, 0, 0, p.numel()), kernels::reshape(p.grad(), {-1}));
  Tensor recv = Tensor::zeros({shard_numel(i)}, p.dtype(), p.device());
  collectives::Work work = comm_.reduce_scatter_async(synced_buffer(send), synced_buffer(recv), collectives::ReduceOp::AVG);
  stats_.bytes += static_cast<double>(send.numel()) * static_cast<double>(dtype_size(send.dtype()));
  reductions_.push_back({i, std::move(send), std::move(recv), std::move(work)});
}

void ShardedDataParallel::finish_reduce_scatters() {
  timed_wait([&] {
    for (auto& r : reductions_) r.work.wait();
  });
  for (auto& r : reductions_) shards_[r.param].set_grad(r.recv);
  reductions_.clear();
}

void ShardedDataParallel::all_gather_into(const Tensor& shard, const Tensor& full, bool async) {
  stats_.bytes += static_cast<double>(full.numel()) * static_cast<double>(dtype_size(full.dtype()));
  if (async) {
    gathers_.push_back(comm_.all_gather_async(synced_buffer(shard), synced_buffer(full)));
  } else {
    timed_wait([&] { comm_.all_gather(synced_buffer(shard), synced_buffer(full)); });
  }
}

void ShardedDataParallel::finish_all_gathers() {
  timed_wait([&] {
    for (auto& w : gathers_) w.wait();
  });
  gathers_.clear();
}

double ShardedDataParallel::global_norm_squared(double local) {
  // Each rank sums its shards; the ranks' sums add up to the full gradient's squared norm.
  Tensor total = Tensor::full({1}, local, DType::Float64);
  timed_wait([&] { comm_.all_reduce(synced_buffer(total), synced_buffer(total), collectives::ReduceOp::SUM); });
  return total.item<double>();
}

Tensor ShardedDataParallel::slice_of(std::size_t i, const Tensor& full) const {
  Tensor padded = Tensor::zeros({padded_numel(i)}, full.dtype(), full.device());
  kernels::copy_(kernels::narrow(padded, 0, 0, full.numel()), kernels::reshape(full, {-1}));
  return kernels::clone(kernels::narrow(padded, 0, comm_.rank() * shard_numel(i), shard_numel(i)));
}

Tensor ShardedDataParallel::gather_full(std::size_t i, const Tensor& shard) {
  Tensor padded = Tensor::zeros({padded_numel(i)}, shard.dtype(), shard.device());
  all_gather_into(kernels::contiguous(shard), padded, false);
  return kernels::view(kernels::narrow(padded, 0, 0, params_[i].numel()), params_[i].shape());
}

Tensor ShardedDataParallel::full_optimizer_state(std::size_t i, const std::string& name) {
  return gather_full(i, optimizer_->state(slot_[i].first, slot_[i].second, name));
}

void ShardedDataParallel::load_optimizer_state(std::size_t i, const std::string& name, const Tensor& full) {
  kernels::copy_(optimizer_->state(slot_[i].first, slot_[i].second, name), slice_of(i, full));
}

}  // namespace ringgrad::nn::parallel
