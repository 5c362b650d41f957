// Data, pipeline, context and tensor parallelism on one process grid (picotron's "4D",
// Megatron-LM's parallel state): the world laid out as dp x pp x cp x tp, tp fastest (a
// tensor-parallel group on neighbouring ranks, one host in practice), and one training step:
//
//   the global batch [B, T]  --rows of data-parallel replica d, positions of cp rank k-->
//     [B/dp, T/cp]  --> pipeline_step over the pp group, each stage's layers split over its tp
//     group, its attention a ring over the cp group
//     --> every gradient averaged over the cp group, then over the dp group by the chosen
//     data-parallel strategy (DDP's buckets, or ZeRO's and FSDP's reduce-scatter to shards)
//
// so the step's gradients are those of one process on the whole batch, and each rank's
// optimizer step updates its own piece of the model (its dp shard of it, under ZeRO and FSDP).
#pragma once

#include <memory>

#include "collectives/communicator.h"
#include "nn/parallel/data_parallel/make_data_parallel.h"
#include "nn/parallel/expert_parallel/expert_data_parallel.h"
#include "nn/parallel/grid/process_grid.h"
#include "nn/parallel/model_parallel/pipeline_schedule.h"

namespace ringgrad::nn::parallel {

/// This rank's coordinates and communicators in a dp x pp x cp x tp grid of `world`.
struct GridGroups {
  ProcessGrid grid;
  std::unique_ptr<collectives::Communicator> dp, pp, cp, tp;

  /// Splits `world` along each dimension (a collective: every rank calls it). Throws
  /// std::invalid_argument on every rank when dp x pp x cp x tp is not the world size, naming them.
  static GridGroups make(collectives::Communicator& world, int dp, int pp, int tp, int cp = 1);
  /// "dp 2 x pp 1 x cp 1 x tp 2", and which job rank holds which coordinates.
  std::string describe() const { return grid.describe(); }
};

/// The stage of `full` this rank holds: stage = its pp coordinate, split over its tp group
/// when tp > 1, on its cp group's share of each sequence when cp > 1.
/// With sequence_parallel (and tp > 1) the stage keeps T/p positions between its layers; with
/// virtual_stages V > 1 it holds V model chunks (interleaved 1F1B).
std::shared_ptr<PipelineStage> make_stage(const GPT& full, GridGroups& groups, bool sequence_parallel = false,
                                          int virtual_stages = 1);

/// The data-parallel strategy `strategy` (make_data_parallel's names: ddp-naive, ddp, zero1,
/// zero2, fsdp) over the grid's dp group, around this rank's `stage`. Its optimizer, from
/// `make_optimizer` over the stage's weight_decay_groups, holds the stage's parameters (or this
/// dp rank's shards of them); FSDP gathers one block at a time; and step() clips by the whole
/// model's gradient norm, as one process would compute it: each piece counted once
/// (tensor-parallel replicas on tp rank 0, the last stage's copy of a tied wte not at all),
/// summed over the tp and pp groups. A collective of the dp group (rank 0's values broadcast).
std::unique_ptr<DataParallel> grid_data_parallel(const std::string& strategy, std::shared_ptr<PipelineStage> stage,
                                                 GridGroups& groups, double weight_decay,
                                                 const OptimizerFactory& make_optimizer,
                                                 DataParallelOptions options = {});
/// The same with the optimizer's groups given (the stage's parameters, e.g. muon_adamw_groups).
std::unique_ptr<DataParallel> grid_data_parallel(const std::string& strategy, std::shared_ptr<PipelineStage> stage,
                                                 GridGroups& groups, std::vector<ParamGroup> param_groups,
                                                 const OptimizerFactory& make_optimizer,
                                                 DataParallelOptions options = {});

/// Expert parallelism on the grid: ExpertDataParallel (ddp-naive + ep) over the dp group around
/// this rank's `stage`, its MoE layers' experts sharded over groups of `ep` consecutive dp ranks
/// (ranks of one pp and one tp coordinate: the same layers and, under tp, the same tokens), the
/// non-expert gradients averaged over dp, each expert's summed over the dp ranks holding it and
/// divided by dp; the norm as grid_data_parallel's, each expert counted once. Throws
/// std::invalid_argument on every rank of the dp group when ep does not divide it or the experts.
std::unique_ptr<ExpertDataParallel> grid_expert_data_parallel(std::shared_ptr<PipelineStage> stage, GridGroups& groups,
                                                              int ep, const ExpertDataParallel::ParamGroups& param_groups,
                                                              const OptimizerFactory& make_optimizer);

/// One step's forward and backward on the global batch idx/targets [B, T] (the same on every
/// rank), for the stage `dp` wraps: replica d takes rows [d B/dp, (d+1) B/dp) and cp rank k
/// positions [k T/cp, (k+1) T/cp) of them, its pipeline runs `micro_batches` micro-batches
/// (their gradients accumulated inside dp.no_sync()), and the gradients are averaged over cp,
/// then over dp by dp.sync_gradients() (or dp.step(), for sharded strategies). Returns the
/// global batch's mean loss on every rank. dp.zero_grad() before and dp.step() after are the
/// caller's. Throws std::invalid_argument when dp does not divide B or cp T (or what
/// pipeline_step throws), naming the numbers.
PipelineStepResult grid_step(DataParallel& dp, GridGroups& groups, const Tensor& idx, const Tensor& targets,
                             int micro_batches, PipelineSchedule schedule);

}  // namespace ringgrad::nn::parallel
