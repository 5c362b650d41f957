// Expert parallelism: the E experts of every mixture-of-experts layer (nn/transformer/moe.h)
// sharded over an expert-parallel group of EP ranks, E/EP experts each (GShard, Lepikhin et
// al. 2020; Switch Transformer, Fedus et al. 2021; DeepSpeed-MoE; Megatron-Core's EP).
//
// Each rank routes its own tokens. Its kept rows, grouped by expert, are sent to the experts'
// ranks with one all_to_all_v (the per-expert row counts are exchanged first with an
// all_to_all, so every rank knows what it will receive), the received rows run through the
// local experts, and a second all_to_all_v sends the outputs back in the order they came.
// Backward is the transpose: the gradient of the outputs goes back along the second exchange's
// reverse, the gradient of the rows along the first's. Per layer and step a rank sends its
// rows not kept locally twice forward and twice backward: with uniform routing
// N k (EP - 1) / EP rows of C elements each way (N its tokens, k the top-k).
//
// Under EP x DP (world = DP groups of EP ranks, rank = dp EP + ep; the ep group is the
// consecutive ranks, the expert-data-parallel group the ranks with the same ep index) the
// non-expert parameters are averaged over the whole world as in data parallelism, and each
// expert's gradient, which already sums the EP group's tokens, is summed over the DP replicas
// of that expert and divided by the world size (Megatron's expert gradient scaling).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "nn/transformer/gpt.h"

namespace ringgrad::nn::parallel {

/// The placement of one MoE layer's experts over `group`: rank r holds experts
/// [r E/EP, (r + 1) E/EP).
class ExpertParallel final : public ExpertPlacement {
 public:
  /// `experts` is E, the layer's experts over the whole group (E % group size == 0).
  ExpertParallel(collectives::Communicator& group, std::int64_t experts);
  /// Collective over the group: exchanges the counts (all_to_all), sends each expert's rows of
  /// `rows` [sum counts, C] to the rank holding it and receives the rows for this rank's experts
  /// (all_to_all_v), runs them, and sends the outputs back in `rows`' order (all_to_all_v);
  /// backward runs the two exchanges transposed. Throws CollectiveError when a peer fails.
  Tensor run(const Tensor& rows, const std::vector<std::int64_t>& counts, const ExpertFn& expert) override;

  /// The last run's rows sent to each rank of the group (this rank's own included), and
  /// received from each.
  const std::vector<std::int64_t>& sent() const { return sent_; }
  const std::vector<std::int64_t>& received() const { return received_; }
  /// E, the layer's experts over the whole group.
  std::int64_t experts() const { return experts_; }

 private:
  collectives::Communicator& group_;
  std::int64_t experts_, local_;
  std::vector<std::int64_t> sent_, received_;
};

/// The ep group (consecutive ranks) and the expert-data-parallel group (same ep index) of a
/// world of DP x EP ranks. Throws std::invalid_argument on every rank when ep does not divide
/// the world, naming the numbers.
struct ExpertParallelGroups {
  std::unique_ptr<collectives::Communicator> ep, expert_dp;
};
ExpertParallelGroups expert_parallel_groups(collectives::Communicator& world, int ep);

/// Keeps in every MoE layer of `model` only this rank's experts, dispatched over `ep_group`;
/// returns the layers' placements (their traffic). Throws std::invalid_argument on every rank
/// when the model has no experts or E is not divisible by the group's size, naming both.
std::vector<std::shared_ptr<ExpertParallel>> shard_experts(GPT& model, collectives::Communicator& ep_group);
/// The same for the MoE `layers` of a part of a model (a pipeline stage's blocks).
std::vector<std::shared_ptr<ExpertParallel>> shard_experts(const std::vector<std::shared_ptr<MoE>>& layers,
                                                           collectives::Communicator& ep_group);

/// Whether `name` is an expert's parameter ("h.0.mlp.experts.3.c_fc.weight").
bool is_expert_parameter(const std::string& name);

/// After backward: non-expert gradients averaged over `world`, expert gradients summed over
/// `expert_dp` and divided by world's size. A parameter without a gradient takes part with zeros.
/// `model` is a GPT, or this rank's pipeline stage with `world` its data-parallel group.
void reduce_expert_parallel_grads(const Module& model, collectives::Communicator& world,
                                  collectives::Communicator& expert_dp);

}  // namespace ringgrad::nn::parallel
