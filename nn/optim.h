// Optimizers: SGD with momentum, Adam and AdamW, and gradient-norm clipping, with PyTorch's
// update rules and names. Each update is a loop over flat arrays (nn/optim_kernels.h), so the
// sharded optimizers of ZeRO can run the same arithmetic on a slice of each parameter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::nn {

/// Parameters that share a weight decay (e.g. decay for matrices, none for biases and norms).
struct ParamGroup {
  std::vector<Tensor> params;
  double weight_decay = 0.0;
};

class Optimizer {
 public:
  Optimizer(std::vector<ParamGroup> groups, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient (parameters without one are skipped).
  virtual void step() = 0;
  /// Resets every parameter's gradient to undefined.
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// Number of steps taken (Adam's t).
  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t steps) { steps_ = steps; }

  /// Names of the per-parameter state tensors, e.g. {"exp_avg", "exp_avg_sq"}: what a
  /// checkpoint saves, and what sharded data parallelism splits across ranks.
  virtual std::vector<std::string> state_names() const = 0;
  /// The names group `group`'s parameters have: state_names(), unless the optimizer runs
  /// different rules on different groups (MuonWithAdamW).
  virtual std::vector<std::string> group_state_names(std::size_t group) const {
    static_cast<void>(group);
    return state_names();
  }
  /// State `name` of parameter `index` in group `group`, created zero-filled (parameter's
  /// shape and dtype) on first use.
  virtual Tensor& state(std::size_t group, std::size_t index, const std::string& name) = 0;

 protected:
  std::vector<ParamGroup> groups_;
  double lr_;
  std::int64_t steps_ = 0;
};

/// SGD with momentum and L2 weight decay (torch.optim.SGD, dampening 0):
/// g += wd p;  buf = momentum buf + g;  p -= lr buf.
class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, double lr, double momentum = 0.0);
  void step() override;
  std::vector<std::string> state_names() const override;
  Tensor& state(std::size_t group, std::size_t index, const std::string& name) override;

 private:
  double momentum_;
  std::vector<std::vector<Tensor>> buffers_;  // [group][param], made on first step
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

/// Adam (Kingma & Ba 2015) with bias correction. Weight decay is L2 (added to the gradient)
/// unless `decoupled_weight_decay`, which gives AdamW (Loshchilov & Hutter 2019):
/// p -= lr wd p before the Adam step. The decay rate comes from each ParamGroup.
class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, AdamOptions options, bool decoupled_weight_decay = false);
  void step() override;
  std::vector<std::string> state_names() const override;
  Tensor& state(std::size_t group, std::size_t index, const std::string& name) override;

  /// Per-parameter first and second moments, [group][param]; undefined before the first step.
  std::vector<std::vector<Tensor>> exp_avg, exp_avg_sq;

 private:
  AdamOptions options_;
  bool decoupled_;
};

/// Adam with decoupled weight decay (torch.optim.AdamW).
class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamOptions options) : Adam(std::move(groups), options, true) {}
};

/// The square of the L2 norm of all gradients of `params` together, in double; parameters
/// without a gradient count 0. GPU gradients are summed on their device and read back once
/// (once per device and dtype where they differ).
double grad_norm_squared(const std::vector<Tensor>& params);
/// Multiplies every gradient of `params` by `factor` in place (nothing to do when it is 1).
void scale_grads_(const std::vector<Tensor>& params, double factor);
/// The factor clipping scales gradients of L2 norm `total_norm` by: min(1, max_norm /
/// (total_norm + 1e-6)), as torch.nn.utils.clip_grad_norm_ (the 1e-6 is PyTorch's).
double clip_coefficient(double total_norm, double max_norm);
/// Scales every gradient by clip_coefficient(total, max_norm) where total is the L2 norm of all
/// gradients together (torch.nn.utils.clip_grad_norm_). Returns total, before clipping. Data
/// parallelism uses the same pieces, with the norm summed over the ranks where they hold shards.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);

}  // namespace ringgrad::nn
