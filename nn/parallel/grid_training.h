// Data, pipeline, context and tensor parallelism on one process grid (picotron's "4D",
// Megatron-LM's parallel state): the world laid out as dp x pp x cp x tp, tp fastest (a
// tensor-parallel group on neighbouring ranks, one host in practice), and one training step:
//
//   the global batch [B, T]  --rows of data-parallel replica d, positions of cp rank k-->
//     [B/dp, T/cp]  --> pipeline_step over the pp group, each stage's layers split over its tp
//     group, its attention a ring over the cp group
//     --> every gradient averaged over the cp group, then the dp group (equal parts of the batch)
//
// so the step's gradients are those of one process on the whole batch, and each rank's
// optimizer step updates its own piece of the model.
#pragma once

#include <memory>

#include "collectives/communicator.h"
#include "collectives/process_grid.h"
#include "nn/parallel/pipeline_schedule.h"

namespace ringgrad::nn::parallel {

/// This rank's coordinates and communicators in a dp x pp x cp x tp grid of `world`.
struct GridGroups {
  collectives::ProcessGrid grid;
  std::unique_ptr<collectives::Communicator> dp, pp, cp, tp;

  /// Splits `world` along each dimension (a collective: every rank calls it). Throws
  /// std::invalid_argument on every rank when dp x pp x cp x tp is not the world size, naming them.
  static GridGroups make(collectives::Communicator& world, int dp, int pp, int tp, int cp = 1);
  /// "dp 2 x pp 1 x cp 1 x tp 2", and which job rank holds which coordinates.
  std::string describe() const { return grid.describe(); }
};

/// The stage of `full` this rank holds: stage = its pp coordinate, split over its tp group
/// when tp > 1, on its cp group's share of each sequence when cp > 1.
/// With sequence_parallel (and tp > 1) the stage keeps T/p positions between its layers.
PipelineStage make_stage(const GPT& full, GridGroups& groups, bool sequence_parallel = false);

/// One step's forward and backward on the global batch idx/targets [B, T] (the same on every
/// rank): replica d takes rows [d B/dp, (d+1) B/dp) and cp rank k positions [k T/cp, (k+1)
/// T/cp) of them, its pipeline runs `micro_batches` micro-batches, and the gradients are
/// averaged over cp and dp. Returns the global batch's mean loss on every rank. The optimizer
/// step is the caller's. Throws std::invalid_argument when dp does not divide B or cp T (or
/// what pipeline_step throws), naming the numbers.
PipelineStepResult grid_step(PipelineStage& stage, GridGroups& groups, const Tensor& idx, const Tensor& targets,
                             int micro_batches, PipelineSchedule schedule);

/// The L2 norm of the whole model's gradient, as one process would compute it: each piece
/// counted once (tensor-parallel replicas on tp rank 0, the last stage's copy of wte not at
/// all), summed over the tp and pp groups. Every rank calls it; every rank gets it.
double grid_grad_norm(PipelineStage& stage, GridGroups& groups);

}  // namespace ringgrad::nn::parallel
