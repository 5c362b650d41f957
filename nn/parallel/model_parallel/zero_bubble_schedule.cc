// ZB-H1, the first zero-bubble schedule of Qi et al. 2023, "Zero Bubble Pipeline Parallelism"
// (ICLR 2024). Backward is split in two: B computes the gradient of the stage's input (what
// the previous stage waits for) and W the gradients of the weights (which nobody waits for).
// Here B runs backward with the linear layers' dW deferred (autograd/linear.h: their inputs and
// output gradients are kept, dW = dy^T x computed in W); norms and embeddings finish in B.
//
// The order is 1F1B's, with each W moved later: stage s keeps up to s W passes pending, runs one
// after each B beyond that, and the rest at the end, where 1F1B's stage s would idle waiting for
// gradients. Stage s then holds at most (S - s - 1 warm-up + 1 + s deferred) = S micro-batches'
// activations (a W still needs its linears' inputs): stage 0's 1F1B peak, so the largest over
// stages is 1F1B's, the paper's memory condition for ZB-H1.
//
// Bubble, with T_F, T_B, T_W the times of the three passes (the paper's section 3.1): 1F1B idles
// (S-1)(T_F + T_B + T_W) per stage, ZB-H1 (S-1)(T_F + T_B - T_W); the step's compute is
// M (T_F + T_B + T_W). With T_F = T_B = T_W the bubble falls from (S-1)/(M+S-1) to
// (S-1)/(3M+S-1), a third for M >> S (and for M >= S, as the schedule needs S micro-batches
// to fill). Real passes are not equal (W here is the linears' dW alone, B the rest of
// backward); 07_pipeline_schedule prints their times beside the measured bubble.
#include <algorithm>

#include "nn/parallel/model_parallel/stage_step.h"

namespace ringgrad::nn::parallel::detail {

void zero_bubble_h1(StageStep& step, int stage, int stages, int m) {
  const auto deferred = static_cast<std::size_t>(stage);  // W passes stage s may keep pending
  auto weight_beyond_deferred = [&] {
    if (step.pending_weight_passes() > deferred) step.weight();
  };
  const int warmup = std::min(stages - stage - 1, m), steady = m - warmup;
  for (int i = 0; i < warmup; ++i) step.send_forward(step.forward(i, step.recv_forward(i)));
  Tensor input = steady > 0 ? step.recv_forward(warmup) : Tensor();
  for (int i = 0; i < steady; ++i) {
    const Tensor output_grad = step.send_forward_recv_backward(step.forward(warmup + i, input));
    const Tensor input_grad = step.backward(output_grad);  // B: the gradient the previous stage waits for
    if (i == steady - 1) step.send_backward(input_grad);
    else input = step.send_backward_recv_forward(input_grad, warmup + i + 1);
    weight_beyond_deferred();
  }
  for (int i = 0; i < warmup; ++i) {
    step.send_backward(step.backward(step.recv_backward()));
    weight_beyond_deferred();
  }
  while (step.pending_weight_passes() > 0) step.weight();  // the tail: where 1F1B's stage s idles
}

}  // namespace ringgrad::nn::parallel::detail
