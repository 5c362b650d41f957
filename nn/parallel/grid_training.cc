// The grid's groups (three splits of the world), and the step: slice the batch for this
// replica, run the pipeline, average the gradients over the replicas.
#include "nn/parallel/grid_training.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "collectives/grid_groups.h"
#include "nn/optim.h"
#include "nn/parallel/tensor_buffer.h"
#include "nn/parallel/tensor_parallel_gpt.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

GridGroups GridGroups::make(collectives::Communicator& world, int dp, int pp, int tp) {
  if (dp < 1 || pp < 1 || tp < 1 || dp * pp * tp != world.world_size())
    throw std::invalid_argument(fmt::format("rank {}: a grid of dp {} x pp {} x tp {} = {} ranks, but the world has {}",
                                            world.rank(), dp, pp, tp, dp * pp * tp, world.world_size()));
  GridGroups g{collectives::ProcessGrid({{"dp", dp}, {"pp", pp}, {"tp", tp}}, world.world_size()), nullptr, nullptr, nullptr};
  g.dp = collectives::split_along(world, g.grid, "dp");
  g.pp = collectives::split_along(world, g.grid, "pp");
  g.tp = collectives::split_along(world, g.grid, "tp");
  return g;
}

PipelineStage make_stage(const GPT& full, GridGroups& groups) {
  return PipelineStage(full, groups.pp->rank(), groups.pp->world_size(),
                       groups.tp->world_size() > 1 ? groups.tp.get() : nullptr);
}

PipelineStepResult grid_step(PipelineStage& stage, GridGroups& groups, const Tensor& idx, const Tensor& targets,
                             int micro_batches, PipelineSchedule schedule) {
  const std::int64_t dp = groups.dp->world_size(), d = groups.dp->rank();
  if (idx.size(0) % dp != 0)
    throw std::invalid_argument(fmt::format("grid_step on rank {} of dp: a batch of {} does not divide into {} "
                                            "data-parallel replicas", d, idx.size(0), dp));
  const std::int64_t rows = idx.size(0) / dp;
  const Tensor x = kernels::contiguous(kernels::narrow(idx, 0, d * rows, rows));
  const Tensor y = kernels::contiguous(kernels::narrow(targets, 0, d * rows, rows));
  PipelineStepResult result = pipeline_step(stage, *groups.pp, x, y, micro_batches, schedule);
  if (dp > 1) {
    for (Tensor& p : stage.parameters()) {
      if (!p.grad().defined()) p.set_grad(Tensor::zeros(p.shape(), p.dtype(), p.device()));
      const Tensor g = p.grad();
      groups.dp->all_reduce(as_buffer(g), as_buffer(g), collectives::ReduceOp::AVG);
    }
    groups.dp->all_reduce(collectives::ConstBuffer(&result.loss, 1, collectives::DType::kFloat64),
                          collectives::Buffer(&result.loss, 1, collectives::DType::kFloat64), collectives::ReduceOp::AVG);
  }
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
