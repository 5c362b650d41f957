#include "nn/parallel/data_parallel.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "autograd/engine.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"
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

DataParallel::DataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                           std::vector<ParamGroup> groups, const OptimizerFactory& make_optimizer)
    : model_(std::move(model)), comm_(comm) {
  std::map<const Storage*, std::string> names;
  for (auto& [name, p] : model_->named_parameters()) names.emplace(p.storage().get(), name);
  // Each parameter once, even when tied (the same tensor registered under two names).
  std::set<const Storage*> seen;
  for (auto& group : groups) {
    ParamGroup unique{{}, group.weight_decay};
    for (const Tensor& p : group.params) {
      if (!seen.insert(p.storage().get()).second) continue;
      auto it = names.find(p.storage().get());
      if (it == names.end()) throw std::invalid_argument("DataParallel: a parameter group holds a tensor that is not a parameter of the model");
      slot_.emplace_back(groups_.size(), unique.params.size());
      params_.push_back(p);
      param_names_.push_back(it->second);
      unique.params.push_back(p);
    }
    groups_.push_back(std::move(unique));
  }
  broadcast_from_rank0();
  optimizer_ = make_optimizer(groups_);
}

DataParallel::~DataParallel() {
  for (Tensor& p : params_) p.autograd_meta().post_accumulate_grad_hooks.clear();
}

void DataParallel::broadcast_from_rank0() {
  // Every rank starts from rank 0's values, so replicas cannot drift from different seeds.
  auto broadcast = [&](const Tensor& t) { comm_.broadcast(as_buffer(t), as_buffer(t), 0); };
  for (const Tensor& p : params_) broadcast(p);
  for (auto& [name, b] : model_->named_buffers()) broadcast(b);
}

void DataParallel::rebuild_optimizer(const std::vector<Tensor>& replacements, const OptimizerFactory& make_optimizer) {
  std::vector<ParamGroup> groups;
  for (const auto& group : groups_) groups.push_back({{}, group.weight_decay});
  for (std::size_t i = 0; i < params_.size(); ++i) groups[slot_[i].first].params.push_back(replacements[i]);
  optimizer_ = make_optimizer(std::move(groups));
}

void DataParallel::backward(const Tensor& loss) { ringgrad::backward(loss); }

double DataParallel::step(double max_grad_norm) {
  synchronize_gradients();
  double norm = 0;
  if (max_grad_norm > 0) {
    norm = std::sqrt(grad_norm_squared());
    const double scale = max_grad_norm / (norm + 1e-6);  // torch.nn.utils.clip_grad_norm_
    if (scale < 1) {
      for (const auto& group : optimizer_->param_groups()) {
        for (const Tensor& p : group.params) {
          if (p.grad().defined()) kernels::mul_(p.grad(), scale);
        }
      }
    }
  }
  optimizer_->step();
  after_step();
  return norm;
}

void DataParallel::zero_grad() { optimizer_->zero_grad(); }

double DataParallel::grad_norm_squared() {
  double total = 0;
  for (const auto& group : optimizer_->param_groups()) {
    for (const Tensor& p : group.params) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;
      if (g.is_cuda()) {  // summed on the GPU; one copy of the result back
        total += kernels::sum(kernels::mul(g, g)).item<double>();
        continue;
      }
      dispatch_floating(g.dtype(), "grad_norm", [&]<typename T>() {
        const T* d = g.data<T>();
        for (std::int64_t i = 0; i < g.numel(); ++i) total += static_cast<double>(d[i]) * d[i];
      });
    }
  }
  return total;
}

Tensor DataParallel::full_parameter(std::size_t i) { return params_[i]; }

Tensor DataParallel::full_optimizer_state(std::size_t i, const std::string& name) {
  return optimizer_->state(slot_[i].first, slot_[i].second, name);
}

void DataParallel::load_parameter(std::size_t i, const Tensor& full) { kernels::copy_(params_[i], full); }

void DataParallel::load_optimizer_state(std::size_t i, const std::string& name, const Tensor& full) {
  kernels::copy_(optimizer_->state(slot_[i].first, slot_[i].second, name), full);
}

StateDict DataParallel::full_state_dict() {
  StateDict state;
  const bool keep = comm_.rank() == 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor full = full_parameter(i);
    if (keep) state.emplace(param_names_[i], kernels::clone(full));
  }
  if (optimizer_->steps() > 0) {
    for (const std::string& name : optimizer_->state_names()) {
      for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor full = full_optimizer_state(i, name);
        if (keep) state.emplace("optimizer." + name + "." + param_names_[i], kernels::clone(full));
      }
    }
  }
  if (keep) state.emplace("optimizer.steps", Tensor::full({1}, static_cast<double>(optimizer_->steps()), DType::Int64));
  for (auto& [name, b] : model_->named_buffers()) {
    if (keep) state.emplace(name, kernels::clone(b));
  }
  return state;
}

void DataParallel::load_full_state_dict(const StateDict& state) {
  auto get = [&](const std::string& name, const Shape& shape) -> const Tensor& {
    auto it = state.find(name);
    if (it == state.end()) throw std::invalid_argument("load_full_state_dict: missing '" + name + "'");
    if (it->second.shape() != shape) {
      throw std::invalid_argument(fmt::format("load_full_state_dict: '{}' is {} in the checkpoint, {} in the model",
                                              name, shape_str(it->second.shape()), shape_str(shape)));
    }
    return it->second;
  };
  for (std::size_t i = 0; i < params_.size(); ++i) load_parameter(i, get(param_names_[i], params_[i].shape()));
  for (auto& [name, b] : model_->named_buffers()) kernels::copy_(b, get(name, b.shape()));
  const std::int64_t steps = get("optimizer.steps", {1}).item<std::int64_t>();
  optimizer_->set_steps(steps);
  if (steps == 0) return;
  for (const std::string& name : optimizer_->state_names()) {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      load_optimizer_state(i, name, get("optimizer." + name + "." + param_names_[i], params_[i].shape()));
    }
  }
}

DataParallel::MemoryUse DataParallel::memory_use() const {
  MemoryUse use;
  std::vector<Tensor> params = params_, grads, states;
  for (std::size_t gi = 0; gi < optimizer_->param_groups().size(); ++gi) {
    const auto& group = optimizer_->param_groups()[gi];
    for (std::size_t pi = 0; pi < group.params.size(); ++pi) {
      params.push_back(group.params[pi]);  // shards, where the strategy shards
      grads.push_back(group.params[pi].grad());
      for (const std::string& name : optimizer_->state_names()) states.push_back(optimizer_->state(gi, pi, name));
    }
  }
  for (const Tensor& p : params_) grads.push_back(p.grad());
  use.params = storage_bytes(params);
  use.grads = storage_bytes(grads);
  use.optimizer = storage_bytes(states);
  return use;
}

void DataParallel::timed_wait(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ringgrad::nn::parallel
