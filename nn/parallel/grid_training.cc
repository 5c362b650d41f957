// The grid's groups (three splits of the world), and the step: slice the batch for this
// replica, run the pipeline, average the gradients over the replicas.
#include "nn/parallel/grid_training.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "collectives/grid_groups.h"
#include "nn/optim.h"
#include "nn/parallel/grad_reduce.h"
#include "nn/parallel/tensor_parallel_gpt.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

GridGroups GridGroups::make(collectives::Communicator& world, int dp, int pp, int tp, int cp) {
  if (dp < 1 || pp < 1 || tp < 1 || cp < 1 || dp * pp * cp * tp != world.world_size())
    throw std::invalid_argument(fmt::format("rank {}: a grid of dp {} x pp {} x cp {} x tp {} = {} ranks, but the world "
                                            "has {}", world.rank(), dp, pp, cp, tp, dp * pp * cp * tp, world.world_size()));
  GridGroups g{collectives::ProcessGrid({{"dp", dp}, {"pp", pp}, {"cp", cp}, {"tp", tp}}, world.world_size()), nullptr,
               nullptr, nullptr, nullptr};
  g.dp = collectives::split_along(world, g.grid, "dp");
  g.pp = collectives::split_along(world, g.grid, "pp");
  g.cp = collectives::split_along(world, g.grid, "cp");
  g.tp = collectives::split_along(world, g.grid, "tp");
  return g;
}

PipelineStage make_stage(const GPT& full, GridGroups& groups, bool sequence_parallel) {
  const bool split = groups.tp->world_size() > 1 || groups.cp->world_size() > 1;  // ring attention lives in the split blocks
  return PipelineStage(full, groups.pp->rank(), groups.pp->world_size(), split ? groups.tp.get() : nullptr,
                       groups.cp->world_size() > 1 ? groups.cp.get() : nullptr, sequence_parallel);
}

namespace {

// Every gradient and the loss averaged over `group` (the ranks saw equal parts of the batch).
void average(PipelineStage& stage, collectives::Communicator& group, double& loss) {
  if (group.world_size() == 1) return;
  all_reduce_grads(stage.parameters(), group, collectives::ReduceOp::AVG);
  group.all_reduce(collectives::ConstBuffer(&loss, 1, collectives::DType::kFloat64),
                   collectives::Buffer(&loss, 1, collectives::DType::kFloat64), collectives::ReduceOp::AVG);
}

}  // namespace

PipelineStepResult grid_step(PipelineStage& stage, GridGroups& groups, const Tensor& idx, const Tensor& targets,
                             int micro_batches, PipelineSchedule schedule) {
  const std::int64_t dp = groups.dp->world_size(), d = groups.dp->rank();
  if (idx.size(0) % dp != 0)
    throw std::invalid_argument(fmt::format("grid_step on {}: a batch of {} does not divide into {} data-parallel "
                                            "replicas", collectives::describe_rank(groups.dp->group()), idx.size(0), dp));
  const std::int64_t cp = groups.cp->world_size(), k = groups.cp->rank();
  if (idx.size(1) % cp != 0)
    throw std::invalid_argument(fmt::format("grid_step on {}: a sequence of {} does not divide into {} "
                                            "context-parallel ranks", collectives::describe_rank(groups.cp->group()),
                                            idx.size(1), cp));
  const std::int64_t rows = idx.size(0) / dp, t = idx.size(1) / cp;
  auto mine = [&](const Tensor& all) {
    return kernels::contiguous(kernels::narrow(kernels::narrow(all, 0, d * rows, rows), 1, k * t, t));
  };
  PipelineStepResult result = pipeline_step(stage, *groups.pp, mine(idx), mine(targets), micro_batches, schedule);
  stage.sum_sequence_parallel_grads();
  average(stage, *groups.cp, result.loss);
  average(stage, *groups.dp, result.loss);
  return result;
}

double grid_grad_norm(PipelineStage& stage, GridGroups& groups) {
  std::vector<Tensor> mine;
  const bool tp = groups.tp->world_size() > 1;
  for (auto& [name, p] : stage.named_parameters()) {
    if (tp && shard_spec(name).dim < 0 && groups.tp->rank() != 0) continue;  // a replica: counted on tp rank 0
    if (name == "wte.weight" && stage.tied_copies() && stage.is_last()) continue;  // the first stage counts wte
    mine.push_back(p);
  }
  double sum = grad_norm_squared(mine);
  const collectives::ConstBuffer in(&sum, 1, collectives::DType::kFloat64);
  const collectives::Buffer out(&sum, 1, collectives::DType::kFloat64);
  groups.tp->all_reduce(in, out, collectives::ReduceOp::SUM);
  groups.pp->all_reduce(in, out, collectives::ReduceOp::SUM);
  return std::sqrt(sum);
}

}  // namespace ringgrad::nn::parallel
