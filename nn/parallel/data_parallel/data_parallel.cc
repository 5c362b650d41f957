// The steps every strategy shares: one copy of each parameter in the optimizer's grouping,
// rank 0's values broadcast to all, and step() = finish communication, clip, update.
#include "nn/parallel/data_parallel/data_parallel.h"

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "nn/parallel/tensor_buffer.h"
#include "trace/trace.h"

namespace ringgrad::nn::parallel {

DataParallel::DataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                           std::vector<ParamGroup> groups, const OptimizerFactory& make_optimizer,
                           const std::function<bool(const std::string& name)>& replicated)
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
  // Every rank starts from rank 0's values, so replicas cannot drift from different seeds.
  auto broadcast = [&](const Tensor& t) { comm_.broadcast(synced_buffer(t), synced_buffer(t), 0); };
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (!replicated || replicated(param_names_[i])) broadcast(params_[i]);
  for (auto& [name, b] : model_->named_buffers()) broadcast(b);
  optimizer_ = make_optimizer(groups_);
}

double DataParallel::step(double max_grad_norm) {
  before_step();
  // The tensors the optimizer updates (shards, where the strategy shards), in params_ order.
  std::vector<Tensor> updated;
  for (const auto& [group, index] : slot_) updated.push_back(optimizer_->param_groups()[group].params[index]);
  if (gradient_scale_ != 1) scale_grads_(updated, gradient_scale_);
  double norm = 0;
  if (max_grad_norm > 0) {
    // Clipping as clip_grad_norm_, with the norm taken over every rank's part.
    std::vector<Tensor> counted;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (!norm_scope_.counts || norm_scope_.counts(param_names_[i])) counted.push_back(updated[i]);
    double sum = global_norm_squared(grad_norm_squared(counted));
    for (collectives::Communicator* group : norm_scope_.groups) {
      group->all_reduce(collectives::ConstBuffer(&sum, 1, collectives::DType::kFloat64),
                        collectives::Buffer(&sum, 1, collectives::DType::kFloat64), collectives::ReduceOp::SUM);
    }
    norm = std::sqrt(sum);
    scale_grads_(updated, clip_coefficient(norm, max_grad_norm));
  }
  optimizer_->step();
  after_step();
  return norm;
}

void DataParallel::add_gradient_hook(std::size_t i, std::function<void(Tensor&)> hook) {
  if (!params_[i].requires_grad()) return;  // frozen: it never gets a gradient, the hook would never run
  gradient_hooks_.push_back(autograd::register_post_accumulate_grad_hook(params_[i], std::move(hook)));
}

void DataParallel::timed_wait(const std::function<void()>& fn) {
  const trace::Span span("communication wait", "wait");
  const auto start = std::chrono::steady_clock::now();
  fn();
  stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ringgrad::nn::parallel
