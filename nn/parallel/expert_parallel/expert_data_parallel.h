// The data-parallel strategy of a model whose experts are sharded (expert_parallel.h): every
// rank holds the non-expert parameters (rank 0's values broadcast, gradients averaged over the
// world) and its ep group's share of the experts (its own values; gradients summed over the
// expert-data-parallel group and divided by the world size), one blocking all-reduce per
// parameter after backward as ddp-naive does. The clipping norm counts the replicated
// gradients once and every expert once (its squares summed over the ep group). Checkpoints
// hold one process's tensors, every expert gathered, so they resume on any --ep.
#pragma once

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
  static Sharded shard(GPT& model, collectives::Communicator& world, int ep);
  ExpertDataParallel(std::shared_ptr<GPT> model, collectives::Communicator& world, Sharded sharded,
                     double weight_decay, const OptimizerFactory& make_optimizer);
  ExpertParallelGroups groups_;
  std::vector<std::shared_ptr<ExpertParallel>> placements_;
};

}  // namespace ringgrad::nn::parallel
