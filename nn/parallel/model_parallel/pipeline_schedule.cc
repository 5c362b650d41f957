// The pipeline schedules as sequences of forward and backward slots of a StageStep
// (stage_step.h), and the exchanges between them: AFAB and 1F1B here, ZB-H1 and interleaved
// 1F1B in their own files.
#include "nn/parallel/model_parallel/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "nn/parallel/model_parallel/stage_step.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Communicator;
using detail::StageStep;

void check_arguments(const PipelineStage& stage, const Communicator& group, const Tensor& idx, int micro_batches,
                     PipelineSchedule schedule) {
  const std::string rank = collectives::describe_rank(group.group());
  if (group.world_size() != stage.stages())
    throw std::invalid_argument(fmt::format("pipeline_step on {}: the group has {} ranks for {} stages", rank,
                                            group.world_size(), stage.stages()));
  if (micro_batches < 1 || idx.size(0) % micro_batches != 0)
    throw std::invalid_argument(fmt::format("pipeline_step on {}: {} micro-batches do not divide a batch of {} (the "
                                            "rows this pipeline trains on)", rank, micro_batches, idx.size(0)));
  const bool interleaved = schedule == PipelineSchedule::kInterleaved1F1B;
  if (interleaved && micro_batches % stage.stages() != 0)
    throw std::invalid_argument(fmt::format("pipeline_step on {}: interleaved 1F1B needs the micro-batches to be a "
                                            "multiple of the {} stages (Megatron-LM's rule), got {}", rank,
                                            stage.stages(), micro_batches));
  if (interleaved != (stage.chunks() > 1))
    throw std::invalid_argument(fmt::format("pipeline_step on {}: the stage holds {} model chunk{}; interleaved 1F1B "
                                            "runs stages of 2 or more, the other schedules stages of 1", rank,
                                            stage.chunks(), stage.chunks() == 1 ? "" : "s"));
}

void all_forward_all_backward(StageStep& step, int m) {
  for (int i = 0; i < m; ++i) step.send_forward(step.forward(i, step.recv_forward(i)));
  for (int i = 0; i < m; ++i) step.send_backward(step.backward(step.recv_backward()));
}

// Fill the pipe, alternate, drain.
void one_forward_one_backward(StageStep& step, int stage, int stages, int m) {
  const int warmup = std::min(stages - stage - 1, m), steady = m - warmup;
  for (int i = 0; i < warmup; ++i) step.send_forward(step.forward(i, step.recv_forward(i)));
  Tensor input = steady > 0 ? step.recv_forward(warmup) : Tensor();
  for (int i = 0; i < steady; ++i) {
    const Tensor output_grad = step.send_forward_recv_backward(step.forward(warmup + i, input));
    const Tensor input_grad = step.backward(output_grad);
    if (i == steady - 1) step.send_backward(input_grad);
    else input = step.send_backward_recv_forward(input_grad, warmup + i + 1);
  }
  for (int i = 0; i < warmup; ++i) step.send_backward(step.backward(step.recv_backward()));
}

}  // namespace

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "afab") return PipelineSchedule::kAllForwardAllBackward;
  if (name == "1f1b") return PipelineSchedule::kOneForwardOneBackward;
  if (name == "interleaved") return PipelineSchedule::kInterleaved1F1B;
  if (name == "zb-h1") return PipelineSchedule::kZeroBubbleH1;
  throw std::invalid_argument(
      fmt::format("pipeline schedule '{}': choose afab (GPipe), 1f1b, interleaved (1F1B over virtual stages) or zb-h1 "
                  "(zero bubble)", name));
}

PipelineStepResult pipeline_step(PipelineStage& stage, Communicator& group, const Tensor& idx, const Tensor& targets,
                                 int micro_batches, PipelineSchedule schedule) {
  check_arguments(stage, group, idx, micro_batches, schedule);
  StageStep step(stage, group, idx, targets, micro_batches, schedule == PipelineSchedule::kZeroBubbleH1);
  const int m = micro_batches, s = stage.stage(), stages = stage.stages();
  switch (schedule) {
    case PipelineSchedule::kAllForwardAllBackward: all_forward_all_backward(step, m); break;
    case PipelineSchedule::kOneForwardOneBackward: one_forward_one_backward(step, s, stages, m); break;
    case PipelineSchedule::kInterleaved1F1B: detail::interleaved_1f1b(step, s, stages, stage.chunks(), m); break;
    case PipelineSchedule::kZeroBubbleH1: detail::zero_bubble_h1(step, s, stages, m); break;
  }
  return step.finish();
}

}  // namespace ringgrad::nn::parallel
