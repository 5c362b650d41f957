// The data-parallel strategy of a model whose experts are sharded (expert_parallel.h): every
// rank holds the non-expert parameters (rank 0's values broadcast, gradients averaged over the
// world) and its ep group's share of the experts (its own values; gradients summed over the
// expert-data-parallel group and divided by the world size), one blocking all-reduce per
// parameter after backward as ddp-naive does. The clipping norm counts the replicated
// gradients once and every expert once (its squares summed over the ep group).
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
