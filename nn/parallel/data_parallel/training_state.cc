// Full checkpoints and memory accounting for every strategy: the walks over parameters,
// optimizer state and buffers, and the replicas' answers to "what is the full tensor" (the
// strategy's own copy). Sharded strategies override those answers (sharded.cc, fsdp.cc).
#include "nn/parallel/data_parallel/training_state.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

// Bytes held by the distinct storages behind `tensors` (views of one buffer count once).
double storage_bytes(const std::vector<Tensor>& tensors) {
  std::set<const Storage*> seen;
  double bytes = 0;
  for (const Tensor& t : tensors) {
    if (t.defined() && seen.insert(t.storage().get()).second) bytes += static_cast<double>(t.storage()->nbytes());
  }
  return bytes;
}

}  // namespace

Tensor DataParallel::full_parameter(std::size_t i) { return params_[i]; }

Tensor DataParallel::full_optimizer_state(std::size_t i, const std::string& name) {
  return optimizer_->state(slot_[i].first, slot_[i].second, name);
}

void DataParallel::load_parameter(std::size_t i, const Tensor& full) { kernels::copy_(params_[i], full); }

void DataParallel::load_optimizer_state(std::size_t i, const std::string& name, const Tensor& full) {
  kernels::copy_(optimizer_->state(slot_[i].first, slot_[i].second, name), full);
}

StateDict full_state_dict(DataParallel& dp) {
  StateDict state;
  const bool keep = dp.comm_.rank() == 0;
  const Optimizer& optimizer = *dp.optimizer_;
  for (std::size_t i = 0; i < dp.params_.size(); ++i) {
    Tensor full = dp.full_parameter(i);  // every rank calls: it may be a collective
    if (keep) state.emplace(dp.param_names_[i], kernels::clone(full));
  }
  if (optimizer.steps() > 0) {
    for (std::size_t i = 0; i < dp.params_.size(); ++i) {
      for (const std::string& name : optimizer.group_state_names(dp.slot_[i].first)) {
        Tensor full = dp.full_optimizer_state(i, name);
        if (keep) state.emplace("optimizer." + name + "." + dp.param_names_[i], kernels::clone(full));
      }
    }
  }
  dp.gather_rank_local_state(state);
  if (keep) state.emplace("optimizer.steps", Tensor::full({1}, static_cast<double>(optimizer.steps()), DType::Int64));
  for (auto& [name, b] : dp.model_->named_buffers()) {
    if (keep) state.emplace(name, kernels::clone(b));
  }
  return state;
}

void load_full_state_dict(DataParallel& dp, const StateDict& state) {
  auto get = [&](const std::string& name, const Shape& shape) -> const Tensor& {
    auto it = state.find(name);
    if (it == state.end()) throw std::invalid_argument("load_full_state_dict: missing '" + name + "'");
    if (it->second.shape() != shape) {
      throw std::invalid_argument(fmt::format("load_full_state_dict: '{}' is {} in the checkpoint, {} in the model",
                                              name, shape_str(it->second.shape()), shape_str(shape)));
    }
    return it->second;
  };
  for (std::size_t i = 0; i < dp.params_.size(); ++i) {
    dp.load_parameter(i, get(dp.param_names_[i], dp.params_[i].shape()));
  }
  for (auto& [name, b] : dp.model_->named_buffers()) kernels::copy_(b, get(name, b.shape()));
  const std::int64_t steps = get("optimizer.steps", {1}).item<std::int64_t>();
  dp.optimizer_->set_steps(steps);
  if (steps == 0) return;
  for (std::size_t i = 0; i < dp.params_.size(); ++i) {
    for (const std::string& name : dp.optimizer_->group_state_names(dp.slot_[i].first)) {
      dp.load_optimizer_state(i, name, get("optimizer." + name + "." + dp.param_names_[i], dp.params_[i].shape()));
    }
  }
}

MemoryUse memory_use(const DataParallel& dp) {
  std::vector<Tensor> params = dp.params_, grads, states;
  const Optimizer& optimizer = *dp.optimizer_;
  for (std::size_t gi = 0; gi < optimizer.param_groups().size(); ++gi) {
    const auto& group = optimizer.param_groups()[gi];
    for (std::size_t pi = 0; pi < group.params.size(); ++pi) {
      params.push_back(group.params[pi]);  // shards, where the strategy shards
      grads.push_back(group.params[pi].grad());
      for (const std::string& name : optimizer.group_state_names(gi)) states.push_back(dp.optimizer_->state(gi, pi, name));
    }
  }
  for (const Tensor& p : dp.params_) grads.push_back(p.grad());
  return {storage_bytes(params), storage_bytes(grads), storage_bytes(states)};
}

}  // namespace ringgrad::nn::parallel
