// Pipeline schedules: one training step of a PipelineStage over the pipeline group, the batch
// split into M micro-batches. Activations go forward to the next stage and their gradients
// back, through autograd: a received activation is a leaf whose gradient, after backward, is
// what goes back.
//
//   AFAB (GPipe, Huang et al. 2019): every micro-batch forward, then every one backward. Each
//     stage holds the activations of all M micro-batches at the peak.
//   1F1B (PipeDream-Flush, Narayanan et al. 2021): stage s runs S-s-1 forwards to fill the
//     pipe, then alternates one forward and one backward, then drains. At most S-s micro-batches'
//     activations are alive on stage s, whatever M is.
//
// Both leave the same gradients (the sum over micro-batches of each one's loss / M, which is
// the whole batch's mean loss) and both idle for the same bubble: (S-1)/(M+S-1) of the step
// when forward and backward times are even across stages. The exchanges are Megatron-LM's:
// a stage that sends and then receives from the same neighbour does both as one batched
// send/recv, so two stages never wait on each other's send.
//
// Two schedules shrink that bubble, each in its own file with its formula:
//   interleaved 1F1B (interleaved_schedule.cc, Narayanan et al. 2021): V model chunks per
//     stage, bubble (S-1)/(V M + S-1), M a multiple of S.
//   ZB-H1 (zero_bubble_schedule.cc, Qi et al. 2023): backward split into the input-gradient
//     pass B and the weight-gradient pass W, the W passes filling 1F1B's bubble: (S-1)/(3M+S-1)
//     when F, B and W take equal times, with 1F1B's peak activation memory.
#pragma once

#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "nn/parallel/model_parallel/pipeline_stage.h"

namespace ringgrad::nn::parallel {

enum class PipelineSchedule { kAllForwardAllBackward, kOneForwardOneBackward, kInterleaved1F1B, kZeroBubbleH1 };

/// "afab", "1f1b", "interleaved" or "zb-h1"; throws std::invalid_argument naming the choices.
PipelineSchedule parse_pipeline_schedule(const std::string& name);

/// One compute slot of a stage, for timelines: 'F', 'B' or (zero-bubble) 'W' of a micro-batch
/// on a model chunk, in seconds of the steady clock (CLOCK_MONOTONIC: one clock for every
/// process on a host).
struct PipelineEvent {
  char kind;
  int micro_batch;
  double start_s, end_s;
  int chunk = 0;
};

struct PipelineStepResult {
  double loss = 0;  // the whole batch's mean cross-entropy, plus the load-balancing losses (every stage gets it)
  std::vector<PipelineEvent> events;
  double start_s = 0, end_s = 0;  // the step on this rank, steady-clock seconds
  // Most micro-batches whose activations were held at once (interleaved: micro-batch chunks,
  // each 1/V of a stage's; zero-bubble: until their W pass).
  std::size_t peak_live_micro_batches = 0;
};

/// Runs forward and backward of `idx` [B, T] against `targets` [B, T] in `micro_batches`
/// equal micro-batches, leaving the gradients in the stage's parameters (the optimizer step
/// is the caller's), then sums the tied wte gradients of the first and last stage. `group`
/// is the pipeline group: its rank is the stage. Every stage calls it with the same B, T and
/// micro_batches (idx is read on the first stage only, targets on the last). Throws
/// std::invalid_argument on every rank when micro_batches does not divide B, the group size
/// is not the stage count, the interleaved schedule gets M not a multiple of S or a stage of one
/// chunk, or another schedule a stage of several, naming the numbers.
PipelineStepResult pipeline_step(PipelineStage& stage, collectives::Communicator& group, const Tensor& idx,
                                 const Tensor& targets, int micro_batches, PipelineSchedule schedule);

}  // namespace ringgrad::nn::parallel
