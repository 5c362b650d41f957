// ExpertDataParallel: the experts sharded before the strategy is built (so that only this rank's
// experts reach the optimizer and escape the broadcast), of a whole GPT or of a pipeline
// stage's MoE layers, the EP x DP reduction after backward,
// the clipping norm over every expert once, and the experts gathered for a checkpoint.
#include "nn/parallel/expert_parallel/expert_data_parallel.h"

#include "nn/parallel/tensor_buffer.h"
#include "nn/transformer/train_step.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

// `name` of expert e ("h.0.mlp.experts.<e>.c_fc.weight", or an optimizer state of it) renamed
// for expert e + shift.
std::string shifted_expert(const std::string& name, std::int64_t shift) {
  const std::string key = ".experts.";
  const std::size_t at = name.find(key) + key.size(), end = name.find('.', at);
  return name.substr(0, at) + std::to_string(std::stoll(name.substr(at, end - at)) + shift) + name.substr(end);
}

std::vector<std::shared_ptr<MoE>> moe_layers(const GPT& model) {
  std::vector<std::shared_ptr<MoE>> layers;
  for (const auto& block : model.h) layers.push_back(block->moe);
  return layers;
}

}  // namespace

ExpertDataParallel::Sharded ExpertDataParallel::shard(const std::vector<std::shared_ptr<MoE>>& layers,
                                                      collectives::Communicator& comm, int ep) {
  Sharded s{expert_parallel_groups(comm, ep), {}};
  s.placements = shard_experts(layers, *s.groups.ep);
  return s;
}

ExpertDataParallel::ExpertDataParallel(std::shared_ptr<GPT> model, collectives::Communicator& world, int ep,
                                       double weight_decay, const OptimizerFactory& make_optimizer)
    : ExpertDataParallel(model, world, shard(moe_layers(*model), world, ep),
                         [&] { return weight_decay_groups(*model, weight_decay); }, make_optimizer) {}

ExpertDataParallel::ExpertDataParallel(std::shared_ptr<Module> model, const std::vector<std::shared_ptr<MoE>>& layers,
                                       collectives::Communicator& comm, int ep, const ParamGroups& param_groups,
                                       const OptimizerFactory& make_optimizer)
    : ExpertDataParallel(std::move(model), comm, shard(layers, comm, ep), param_groups, make_optimizer) {}

ExpertDataParallel::ExpertDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                                       Sharded sharded, const ParamGroups& param_groups,
                                       const OptimizerFactory& make_optimizer)
    : DataParallel(std::move(model), comm, param_groups(), make_optimizer,
                   [](const std::string& name) { return !is_expert_parameter(name); }),
      groups_(std::move(sharded.groups)), placements_(std::move(sharded.placements)),
      experts_(placements_.empty() ? 0 : placements_.front()->experts()) {}

void ExpertDataParallel::backward(const Tensor& loss) {
  DataParallel::backward(loss);
  if (sync_enabled_) sync_gradients();
}

void ExpertDataParallel::sync_gradients() {
  timed_wait([&] { reduce_expert_parallel_grads(*model_, comm_, *groups_.expert_dp); });
  for (const Tensor& p : params_)
    stats_.bytes += static_cast<double>(p.numel()) * static_cast<double>(dtype_size(p.dtype()));
}

double ExpertDataParallel::global_norm_squared(double) {
  std::vector<Tensor> dense, expert;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (norm_scope_.counts && !norm_scope_.counts(param_names_[i])) continue;  // a grid's replica counted elsewhere
    (is_expert_parameter(param_names_[i]) ? expert : dense).push_back(params_[i]);
  }
  double experts = grad_norm_squared(expert);
  groups_.ep->all_reduce(collectives::ConstBuffer(&experts, 1, collectives::DType::kFloat64),
                         collectives::Buffer(&experts, 1, collectives::DType::kFloat64), collectives::ReduceOp::SUM);
  return grad_norm_squared(dense) + experts;
}

void ExpertDataParallel::gather_rank_local_state(StateDict& state) {
  // Rank q of the ep group holds experts [q L, (q + 1) L) in the same order and shapes as ep
  // rank 0's [0, L): one gather per tensor to ep rank 0; world rank 0 keeps them.
  collectives::Communicator& ep = *groups_.ep;
  const bool keep = comm_.rank() == 0;
  const std::int64_t L = experts_ / ep.world_size();
  auto gather = [&](const std::string& name, const Tensor& mine) {
    const Tensor send = kernels::contiguous(mine);
    const Tensor all = Tensor::empty({ep.world_size() * send.numel()}, send.dtype(), send.device());
    ep.gather(synced_buffer(send), synced_buffer(all), 0);
    if (!keep) return;
    for (std::int64_t q = 1; q < ep.world_size(); ++q)
      state.emplace(shifted_expert(name, q * L),
                    kernels::clone(kernels::reshape(kernels::narrow(all, 0, q * send.numel(), send.numel()), send.shape())));
  };
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (is_expert_parameter(param_names_[i])) gather(param_names_[i], params_[i]);
  if (optimizer_->steps() == 0) return;  // no moments yet, as full_state_dict writes none
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!is_expert_parameter(param_names_[i])) continue;
    for (const std::string& name : optimizer_->group_state_names(slot_[i].first))
      gather("optimizer." + name + "." + param_names_[i], optimizer_->state(slot_[i].first, slot_[i].second, name));
  }
}

}  // namespace ringgrad::nn::parallel
