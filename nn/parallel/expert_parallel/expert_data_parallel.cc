// ExpertDataParallel: the experts sharded before the strategy is built (so that only this rank's
// experts reach the optimizer and escape the broadcast), the EP x DP reduction after backward,
// and the clipping norm over every expert once.
#include "nn/parallel/expert_parallel/expert_data_parallel.h"

#include "nn/transformer/train_step.h"

namespace ringgrad::nn::parallel {
ExpertDataParallel::Sharded ExpertDataParallel::shard(GPT& model, collectives::Communicator& world, int ep) {
  Sharded s{expert_parallel_groups(world, ep), {}};
  s.placements = shard_experts(model, *s.groups.ep);
  return s;
}

ExpertDataParallel::ExpertDataParallel(std::shared_ptr<GPT> model, collectives::Communicator& world, int ep,
                                       double weight_decay, const OptimizerFactory& make_optimizer)
    : ExpertDataParallel(model, world, shard(*model, world, ep), weight_decay, make_optimizer) {}

ExpertDataParallel::ExpertDataParallel(std::shared_ptr<GPT> model, collectives::Communicator& world,
                                       Sharded sharded, double weight_decay,
                                       const OptimizerFactory& make_optimizer)
    : DataParallel(model, world, weight_decay_groups(*model, weight_decay), make_optimizer,
                   [](const std::string& name) { return !is_expert_parameter(name); }),
      groups_(std::move(sharded.groups)), placements_(std::move(sharded.placements)) {}

void ExpertDataParallel::backward(const Tensor& loss) {
  DataParallel::backward(loss);
  if (sync_enabled_) sync_gradients();
}

void ExpertDataParallel::sync_gradients() {
  timed_wait([&] { reduce_expert_parallel_grads(static_cast<const GPT&>(*model_), comm_, *groups_.expert_dp); });
  for (const Tensor& p : params_)
    stats_.bytes += static_cast<double>(p.numel()) * static_cast<double>(dtype_size(p.dtype()));
}

double ExpertDataParallel::global_norm_squared(double) {
  std::vector<Tensor> dense, expert;
  for (std::size_t i = 0; i < params_.size(); ++i) (is_expert_parameter(param_names_[i]) ? expert : dense).push_back(params_[i]);
  double experts = grad_norm_squared(expert);
  groups_.ep->all_reduce(collectives::ConstBuffer(&experts, 1, collectives::DType::kFloat64),
                         collectives::Buffer(&experts, 1, collectives::DType::kFloat64), collectives::ReduceOp::SUM);
  return grad_norm_squared(dense) + experts;
}

}  // namespace ringgrad::nn::parallel
