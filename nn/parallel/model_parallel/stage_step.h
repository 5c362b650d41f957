// StageStep: one stage's part of one pipeline step, the pieces every schedule is made of. Its
// compute slots are forward (F), backward (B: with the weight gradients, or, for a zero-bubble
// schedule, the input gradients alone) and the deferred weight-gradient pass (W); its exchanges
// are Megatron-LM's recv_forward, send_forward, send_forward_recv_backward,
// send_backward_recv_forward, recv_backward, send_backward, and for interleaved schedules one
// batch to both ring neighbours. A received activation is a leaf whose gradient, after backward,
// is what goes back. Internal to the schedules (pipeline_schedule.cc, zero_bubble_schedule.cc,
// interleaved_schedule.cc).
#pragma once

#include <deque>
#include <vector>

#include "autograd/linear.h"
#include "collectives/communicator.h"
#include "nn/parallel/model_parallel/pipeline_schedule.h"
#include "nn/parallel/model_parallel/pipeline_stage.h"

namespace ringgrad::nn::parallel::detail {

class StageStep {
 public:
  /// With defer_weight_grads, backward computes input gradients only and queues the weight
  /// gradients of the linear layers for weight() (autograd/linear.h).
  StageStep(PipelineStage& stage, collectives::Communicator& group, const Tensor& idx, const Tensor& targets,
            int micro_batches, bool defer_weight_grads = false);

  // --- Slots ---------------------------------------------------------------------------------
  /// Forward of micro-batch m through model chunk `chunk`; its loss / M on the last chunk (with
  /// the chunk's load-balancing loss; elsewhere that is kept for backward).
  Tensor forward(int m, const Tensor& input, int chunk = 0);
  /// Backward of the oldest micro-batch in flight on `chunk`; returns its input's gradient
  /// (undefined on the first chunk of the model).
  Tensor backward(const Tensor& output_grad, int chunk = 0);
  /// W: the queued weight gradients of the oldest micro-batch whose backward has run.
  void weight();
  /// Micro-batches whose backward ran but whose weight pass has not.
  std::size_t pending_weight_passes() const { return weight_passes_.size(); }

  // --- Exchanges with the neighbours (one chunk per stage) ---------------------------------
  /// Micro-batch m's token ids [mb, T] (int64), the first stage's input.
  Tensor first_input(int m) const;
  /// Micro-batch m's activation [mb, T, C] from the previous stage (blocking), as a leaf that
  /// will hold its gradient; on the first stage, first_input(m).
  Tensor recv_forward(int m);
  /// This stage's output [mb, T, C] to the next stage (blocking; nothing on the last).
  void send_forward(const Tensor& y);
  /// The gradient of this stage's output [mb, T, C] from the next stage (blocking; the messages
  /// arrive in the order the outputs were sent); undefined on the last stage.
  Tensor recv_backward();
  /// The gradient of this stage's input to the previous stage (blocking; nothing on the first).
  void send_backward(const Tensor& g);
  /// Send y forward and receive the gradient of an earlier output from the same neighbour, as one batch.
  Tensor send_forward_recv_backward(const Tensor& y);
  /// Send a gradient back and receive the next micro-batch's input from the same neighbour, as one batch.
  Tensor send_backward_recv_forward(const Tensor& g, int m);

  // --- Exchanges on the ring of stages (interleaved: S-1's chunk c feeds 0's chunk c+1) ------
  struct Received {
    Tensor input, output_grad;
  };
  /// One batch: `output` (if defined) to the next stage, `input_grad` (if defined) to the
  /// previous one, and what is asked for received from them.
  Received exchange(const Tensor& output, bool recv_input, const Tensor& input_grad, bool recv_output_grad);

  // --- The end of the step -------------------------------------------------------------------
  /// Sums the tied wte gradients, sums the loss over the stages, closes the timing.
  PipelineStepResult finish();

 private:
  struct InFlight {  // one micro-batch on one chunk: its input (a leaf past the first), output and, off
    int index;         // the last chunk, its MoE layers' load-balancing loss / M (undefined without)
    Tensor input, output, aux;
  };
  struct WeightPass {  // the deferred dW of one micro-batch's backward
    int index, chunk;
    std::vector<WeightGradPass> passes;
  };

  void sum_tied_grads();
  Tensor received_activation() const;

  PipelineStage& stage_;
  collectives::Communicator& group_;
  const Tensor& idx_;
  const Tensor& targets_;
  int m_;
  bool defer_weight_grads_;
  std::int64_t mb_;
  Shape activation_shape_;
  DType dtype_;
  Device device_;
  std::vector<std::deque<InFlight>> live_;  // per chunk, oldest first
  std::deque<WeightPass> weight_passes_;
  std::size_t held_ = 0;  // micro-batch-chunks whose activations are held (forward done, last pass not)
  double loss_ = 0;
  PipelineStepResult result_;
};

/// The schedules beyond AFAB and 1F1B, each in its own file: one step of stage `stage` of
/// `stages` over `micro_batches` micro-batches, driving `step` (collective over the pipeline
/// group). ZB-H1 (zero_bubble_schedule.cc) splits each backward into B and a deferred W pass;
/// interleaved 1F1B (interleaved_schedule.cc) runs `chunks` model chunks per stage and needs
/// micro_batches to be a multiple of stages (pipeline_schedule.cc refuses it otherwise).
void zero_bubble_h1(StageStep& step, int stage, int stages, int micro_batches);
void interleaved_1f1b(StageStep& step, int stage, int stages, int chunks, int micro_batches);

}  // namespace ringgrad::nn::parallel::detail
