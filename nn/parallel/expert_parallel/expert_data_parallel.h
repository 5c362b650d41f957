// The data-parallel strategy of a model whose experts are sharded (expert_parallel.h): every
// rank holds the non-expert parameters (rank 0's values broadcast, gradients averaged over the
// world) and its ep group's share of the experts (its own values; gradients summed over the
// expert-data-parallel group and divided by the world size), one blocking all-reduce per
// parameter after backward as ddp-naive does. The clipping norm counts the replicated
// gradients once and every expert once (its squares summed over the ep group). Checkpoints
// hold one process's tensors, every expert gathered, so they resume on any --ep.
//
// On a dp x pp x tp grid (nn/parallel/grid) the same strategy wraps a rank's pipeline stage
// over its dp group: the ep group is ep consecutive ranks of the dp group (so it holds ranks of
// one pp and one tp coordinate, which see the same stage and, under tp, the same tokens), the
// expert-data-parallel group the dp ranks with the same ep index.
#pragma once

#include <functional>
#include <memory>

#include "nn/parallel/data_parallel/data_parallel.h"
#include "nn/parallel/expert_parallel/expert_parallel.h"

namespace ringgrad::nn::parallel {

class ExpertDataParallel final : public DataParallel {
 public:
  /// Shards `model`'s experts over groups of `ep` consecutive ranks of `world`, then wraps it
  /// with the optimizer over weight_decay_groups(model, weight_decay). Throws
  /// std::invalid_argument on every rank when ep does not divide the world or the experts.
  ExpertDataParallel(std::shared_ptr<GPT> model, collectives::Communicator& world, int ep, double weight_decay,
                     const OptimizerFactory& make_optimizer);
  /// The same for `model`, a part of a model whose MoE `layers` it holds (a pipeline stage),
  /// over `comm` (the grid's dp group), the optimizer over the groups `param_groups()` returns
  /// once the experts are sharded.
  using ParamGroups = std::function<std::vector<ParamGroup>()>;
  ExpertDataParallel(std::shared_ptr<Module> model, const std::vector<std::shared_ptr<MoE>>& layers,
                     collectives::Communicator& comm, int ep, const ParamGroups& param_groups,
                     const OptimizerFactory& make_optimizer);
  std::string name() const override { return "ddp-naive + ep"; }
  void backward(const Tensor& loss) override;
  void sync_gradients() override;
  /// The layers' placements (their last step's traffic) and the two groups.
  const std::vector<std::shared_ptr<ExpertParallel>>& placements() const { return placements_; }
  const ExpertParallelGroups& groups() const { return groups_; }

 protected:
  double global_norm_squared(double local) override;
  /// Checkpoints: every expert's parameters and optimizer state (AdamW's moments) gathered from
  /// the ep group to rank 0 under one process's names ("h.0.mlp.experts.3.c_fc.weight"); the
  /// dp replicas of an expert are equal, so rank 0's ep group holds them all. Loading needs
  /// nothing of its own: every rank takes its experts from the one-process checkpoint by name.
  void gather_rank_local_state(StateDict& state) override;

 private:
  struct Sharded {
    ExpertParallelGroups groups;
    std::vector<std::shared_ptr<ExpertParallel>> placements;
  };
  static Sharded shard(const std::vector<std::shared_ptr<MoE>>& layers, collectives::Communicator& comm, int ep);
  ExpertDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm, Sharded sharded,
                     const ParamGroups& param_groups, const OptimizerFactory& make_optimizer);
  ExpertParallelGroups groups_;
  std::vector<std::shared_ptr<ExpertParallel>> placements_;
  std::int64_t experts_;  // E, every layer's
};

}  // namespace ringgrad::nn::parallel
