// The grid's groups (four splits of the world), the data-parallel strategy around a stage with
// the whole model's gradient norm (with expert parallelism over part of the dp group), and the step: slice the batch for this replica, run the
// pipeline without syncing, average over the context-parallel ranks, let the strategy average
// over the data-parallel replicas.
#include "nn/parallel/grid/grid_training.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "nn/optim.h"
#include "nn/parallel/grid/grid_groups.h"
#include "nn/parallel/model_parallel/grad_reduce.h"
#include "nn/parallel/model_parallel/tensor_parallel_gpt.h"
#include "nn/transformer/train_step.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

GridGroups GridGroups::make(collectives::Communicator& world, int dp, int pp, int tp, int cp) {
  if (dp < 1 || pp < 1 || tp < 1 || cp < 1 || dp * pp * cp * tp != world.world_size())
    throw std::invalid_argument(fmt::format("rank {}: a grid of dp {} x pp {} x cp {} x tp {} = {} ranks, but the world "
                                            "has {}", world.rank(), dp, pp, cp, tp, dp * pp * cp * tp, world.world_size()));
  GridGroups g{ProcessGrid({{"dp", dp}, {"pp", pp}, {"cp", cp}, {"tp", tp}}, world.world_size()), nullptr,
               nullptr, nullptr, nullptr};
  g.dp = split_along(world, g.grid, "dp");
  g.pp = split_along(world, g.grid, "pp");
  g.cp = split_along(world, g.grid, "cp");
  g.tp = split_along(world, g.grid, "tp");
  return g;
}

std::shared_ptr<PipelineStage> make_stage(const GPT& full, GridGroups& groups, bool sequence_parallel,
                                          int virtual_stages) {
  const bool split = groups.tp->world_size() > 1 || groups.cp->world_size() > 1;  // ring attention lives in the split blocks
  return std::make_shared<PipelineStage>(full, groups.pp->rank(), groups.pp->world_size(),
                                         split ? groups.tp.get() : nullptr,
                                         groups.cp->world_size() > 1 ? groups.cp.get() : nullptr, sequence_parallel,
                                         virtual_stages);
}

std::unique_ptr<DataParallel> grid_data_parallel(const std::string& strategy, std::shared_ptr<PipelineStage> stage,
                                                 GridGroups& groups, double weight_decay,
                                                 const OptimizerFactory& make_optimizer, DataParallelOptions options) {
  std::vector<ParamGroup> param_groups = weight_decay_groups(*stage, weight_decay);
  return grid_data_parallel(strategy, std::move(stage), groups, std::move(param_groups), make_optimizer, options);
}

namespace {

// The whole model's gradient norm over the grid (grid_data_parallel's comment says how).
void set_grid_norm_scope(DataParallel& dp, const PipelineStage& stage, GridGroups& groups) {
  const bool tp_replica = stage.is_split() && groups.tp->rank() != 0;
  const bool wte_copy = stage.tied_copies() && stage.is_last();
  DataParallel::NormScope scope;
  scope.counts = [tp_replica, wte_copy](const std::string& name) {
    if (tp_replica && shard_spec(name).dim < 0) return false;  // replicated over tp: counted on tp rank 0
    return !(wte_copy && name == "wte.weight");                 // the first stage counts wte
  };
  scope.groups = {groups.tp.get(), groups.pp.get()};
  dp.set_norm_scope(std::move(scope));
}

}  // namespace

std::unique_ptr<DataParallel> grid_data_parallel(const std::string& strategy, std::shared_ptr<PipelineStage> stage,
                                                 GridGroups& groups, std::vector<ParamGroup> param_groups,
                                                 const OptimizerFactory& make_optimizer, DataParallelOptions options) {
  if (strategy == "fsdp" && options.fsdp_units.empty()) options.fsdp_units = stage->h;
  const PipelineStage& held = *stage;
  auto dp = make_data_parallel(strategy, std::move(stage), *groups.dp, std::move(param_groups), make_optimizer, options);
  set_grid_norm_scope(*dp, held, groups);
  return dp;
}

std::unique_ptr<ExpertDataParallel> grid_expert_data_parallel(std::shared_ptr<PipelineStage> stage, GridGroups& groups,
                                                              int ep, const ExpertDataParallel::ParamGroups& param_groups,
                                                              const OptimizerFactory& make_optimizer) {
  if (ep < 1 || groups.dp->world_size() % ep != 0)
    throw std::invalid_argument(fmt::format("grid_expert_data_parallel on {}: an expert-parallel group of {} ranks does "
                                            "not divide the data-parallel group of {} it is a part of",
                                            collectives::describe_rank(groups.dp->group()), ep,
                                            groups.dp->world_size()));
  std::vector<std::shared_ptr<MoE>> layers;
  for (const auto& block : stage->h) {
    if (const auto whole = std::dynamic_pointer_cast<Block>(block)) layers.push_back(whole->moe);
    if (const auto split = std::dynamic_pointer_cast<TensorParallelBlock>(block)) layers.push_back(split->moe);
  }
  const PipelineStage& held = *stage;
  auto dp = std::make_unique<ExpertDataParallel>(std::move(stage), layers, *groups.dp, ep, param_groups, make_optimizer);
  set_grid_norm_scope(*dp, held, groups);
  return dp;
}

namespace {

// The loss, and with `grads` every gradient, averaged over `group` (its ranks saw equal parts of the batch).
void average(PipelineStage& stage, collectives::Communicator& group, double& loss, bool grads) {
  if (group.world_size() == 1) return;
  if (grads) all_reduce_grads(stage.parameters(), group, collectives::ReduceOp::AVG);
  group.all_reduce(collectives::ConstBuffer(&loss, 1, collectives::DType::kFloat64),
                   collectives::Buffer(&loss, 1, collectives::DType::kFloat64), collectives::ReduceOp::AVG);
}

}  // namespace

PipelineStepResult grid_step(DataParallel& dp, GridGroups& groups, const Tensor& idx, const Tensor& targets,
                             int micro_batches, PipelineSchedule schedule) {
  auto& stage = dynamic_cast<PipelineStage&>(dp.module());
  const std::int64_t replicas = groups.dp->world_size(), d = groups.dp->rank();
  if (idx.size(0) % replicas != 0)
    throw std::invalid_argument(fmt::format("grid_step on {}: a batch of {} does not divide into {} data-parallel "
                                            "replicas", collectives::describe_rank(groups.dp->group()), idx.size(0),
                                            replicas));
  const std::int64_t cp = groups.cp->world_size(), k = groups.cp->rank();
  if (idx.size(1) % cp != 0)
    throw std::invalid_argument(fmt::format("grid_step on {}: a sequence of {} does not divide into {} "
                                            "context-parallel ranks", collectives::describe_rank(groups.cp->group()),
                                            idx.size(1), cp));
  const std::int64_t rows = idx.size(0) / replicas, t = idx.size(1) / cp;
  auto mine = [&](const Tensor& all) {
    return kernels::contiguous(kernels::narrow(kernels::narrow(all, 0, d * rows, rows), 1, k * t, t));
  };
  PipelineStepResult result;
  {
    auto local = dp.no_sync();  // the micro-batches' gradients add up here; dp averages them once
    result = pipeline_step(stage, *groups.pp, mine(idx), mine(targets), micro_batches, schedule);
  }
  stage.sum_sequence_parallel_grads();
  average(stage, *groups.cp, result.loss, true);
  dp.sync_gradients();
  average(stage, *groups.dp, result.loss, false);
  return result;
}

}  // namespace ringgrad::nn::parallel
