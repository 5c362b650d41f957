// ZeRO stages 1 and 2 on top of the sharded machinery: the optimizer's tensors are views into
// each parameter's own (padded) storage, so the update and the all-gather after it are in place.
#include "nn/parallel/data_parallel/zero.h"

#include <fmt/format.h>

namespace ringgrad::nn::parallel {

ZeroDataParallel::ZeroDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                                   std::vector<ParamGroup> groups, const OptimizerFactory& make_optimizer, int stage)
    : ShardedDataParallel(std::move(model), comm, std::move(groups), make_optimizer), stage_(stage) {
  if (stage != 1 && stage != 2) throw std::invalid_argument(fmt::format("ZeRO: stage {} is not 1 or 2", stage));
  plan_shards();
  reduced_.assign(params_.size(), false);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    if (p.offset() != 0 || !p.is_contiguous() ||
        p.storage()->nbytes() != static_cast<std::size_t>(p.numel()) * dtype_size(p.dtype())) {
      throw std::invalid_argument("ZeRO: parameter '" + param_names_[i] + "' must own its storage");
    }
    // The full parameter's storage grows to the padded length; this rank's shard is a view
    // into it, so the optimizer updates the parameter in place and all-gather fills the rest.
    p.storage()->resize(static_cast<std::size_t>(padded_numel(i)) * dtype_size(p.dtype()));
    shards_.emplace_back(p.storage(), Shape{shard_numel(i)}, Strides{1}, comm_.rank() * shard_numel(i), p.dtype());
    shards_.back().set_requires_grad(true);
    if (stage_ == 2) {
      add_gradient_hook(i, [this, i](Tensor& param) {
        if (!sync_enabled_) return;
        reduce_scatter_gradient(i);
        reduced_[i] = true;
        param.set_grad(Tensor());  // stage 2: the full gradient is not kept
      });
    }
  }
  rebuild_optimizer(shards_, make_optimizer);
}

void ZeroDataParallel::backward(const Tensor& loss) {
  if (sync_enabled_) reduced_.assign(params_.size(), false);
  DataParallel::backward(loss);
}

void ZeroDataParallel::before_step() {
  if (!sync_enabled_) return;
  // Stage 1 sends everything now; stage 2 only what no hook sent (unused parameters), in
  // parameter order so every rank issues the same sequence.
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!reduced_[i]) reduce_scatter_gradient(i);
  }
  reduced_.assign(params_.size(), false);
  finish_reduce_scatters();
}

void ZeroDataParallel::after_step() {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor full(params_[i].storage(), Shape{padded_numel(i)}, Strides{1}, 0, params_[i].dtype());
    all_gather_into(shards_[i], full, true);  // in place: the shard is rank's block of `full`
  }
  finish_all_gathers();
}

void ZeroDataParallel::zero_grad() {
  DataParallel::zero_grad();  // the shards' gradients
  for (Tensor& p : params_) p.set_grad(Tensor());
}

}  // namespace ringgrad::nn::parallel
