// FSDP's units: which parameters each gathers, the module hooks that gather and free them
// around forward, the identity op that gathers them again before backward, and the hooks that
// reduce-scatter a unit's gradients once all of them are complete.
#include "nn/parallel/data_parallel/fsdp.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

FullyShardedDataParallel::FullyShardedDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                                                   std::vector<ParamGroup> groups,
                                                   const OptimizerFactory& make_optimizer,
                                                   std::vector<std::shared_ptr<Module>> units)
    : ShardedDataParallel(std::move(model), comm, std::move(groups), make_optimizer) {
  plan_shards();
  if (units.empty()) {
    for (auto& [name, child] : model_->named_children()) units.push_back(child);
  }
  std::map<const Storage*, std::size_t> index;
  for (std::size_t i = 0; i < params_.size(); ++i) index.emplace(params_[i].storage().get(), i);
  std::set<std::size_t> assigned;
  for (auto& module : units) {
    Unit unit;
    for (const Tensor& p : module->parameters()) {
      auto it = index.find(p.storage().get());
      if (it == index.end() || std::find(unit.members.begin(), unit.members.end(), it->second) != unit.members.end()) continue;
      if (!assigned.insert(it->second).second) {
        throw std::invalid_argument("FSDP: parameter '" + param_names_[it->second] + "' belongs to two units");
      }
      unit.members.push_back(it->second);
    }
    units_.push_back(unit);
  }
  Unit root;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!assigned.count(i)) root.members.push_back(i);
  }
  units_.push_back(root);

  // Shard every parameter (own storage, so the full one can be freed) and free the full ones.
  for (std::size_t i = 0; i < params_.size(); ++i) {
    shards_.push_back(slice_of(i, params_[i]));
    shards_.back().set_requires_grad(true);
    params_[i].storage()->resize(0);
  }
  rebuild_optimizer(shards_, make_optimizer);

  // Hooks: units gather around their own forward; the root around the whole model's.
  for (std::size_t u = 0; u < units_.size(); ++u) {
    Module& module = u + 1 < units_.size() ? *units[u] : *model_;
    forward_hooks_.push_back(module.register_forward_pre_hook([this, u](Module&) { gather(units_[u]); }));
    if (u + 1 < units_.size()) {
      forward_hooks_.push_back(
          module.register_forward_hook([this, u](Module&, const Tensor& y) { return after_forward(units_[u], y); }));
    }
    for (std::size_t i : units_[u].members) add_gradient_hook(i, [this, u](Tensor&) { on_gradient_ready(units_[u]); });
  }
}

void FullyShardedDataParallel::gather(Unit& unit) {
  if (unit.gathered) return;
  for (std::size_t i : unit.members) {
    Tensor& p = params_[i];
    p.storage()->resize(static_cast<std::size_t>(padded_numel(i)) * dtype_size(p.dtype()));
    all_gather_into(shards_[i], Tensor(p.storage(), Shape{padded_numel(i)}, Strides{1}, 0, p.dtype()), true);
  }
  finish_all_gathers();
  unit.gathered = true;
}

void FullyShardedDataParallel::release(Unit& unit) {
  for (std::size_t i : unit.members) params_[i].storage()->resize(0);
  unit.gathered = false;
}

Tensor FullyShardedDataParallel::after_forward(Unit& unit, const Tensor& output) {
  release(unit);
  if (!GradMode::is_enabled() || !output.requires_grad()) return output;
  // An identity op on the unit's output: its backward runs before any of the unit's own
  // backward nodes, which is the moment to bring the parameters back.
  return autograd::record("fsdp_pre_backward", output.detach(), {output}, [this, &unit](const Tensor& g) {
    gather(unit);
    return std::vector<Tensor>{g};
  });
}

void FullyShardedDataParallel::backward(const Tensor& loss) {
  for (auto& unit : units_) {
    unit.pending = unit.members.size();
    unit.reduced = false;
  }
  DataParallel::backward(loss);
}

void FullyShardedDataParallel::on_gradient_ready(Unit& unit) {
  if (!sync_enabled_ || --unit.pending > 0) return;  // inside no_sync() nothing is counted or sent
  // The unit's gradients are complete: send each to its owner, then drop the full copies.
  for (std::size_t i : unit.members) {
    reduce_scatter_gradient(i);
    params_[i].set_grad(Tensor());
  }
  unit.reduced = true;
  if (&unit != &units_.back()) release(unit);
}

void FullyShardedDataParallel::before_step() {
  if (!sync_enabled_) return;
  for (auto& unit : units_) {  // units some parameter of which received no gradient, or all after no_sync()
    if (!unit.reduced) {
      for (std::size_t i : unit.members) {
        reduce_scatter_gradient(i);
        params_[i].set_grad(Tensor());
      }
    }
    unit.reduced = false;  // the next step starts afresh
  }
  finish_reduce_scatters();
  for (auto& unit : units_) {
    if (unit.gathered) release(unit);
  }
}

void FullyShardedDataParallel::zero_grad() {
  DataParallel::zero_grad();
  for (Tensor& p : params_) p.set_grad(Tensor());
}

Tensor FullyShardedDataParallel::full_parameter(std::size_t i) { return gather_full(i, shards_[i]); }

void FullyShardedDataParallel::load_parameter(std::size_t i, const Tensor& full) {
  kernels::copy_(shards_[i], slice_of(i, full));
}

}  // namespace ringgrad::nn::parallel
