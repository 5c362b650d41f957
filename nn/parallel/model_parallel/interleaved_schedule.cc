// Interleaved 1F1B (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
// GPU Clusters Using Megatron-LM", section 2.2.2), as Megatron-LM's
// forward_backward_pipelining_with_interleaving runs it. Each of the S stages holds V model
// chunks (PipelineStage with virtual_stages): chunk c of stage s is virtual stage c S + s, so a
// micro-batch goes round the ring of stages V times forward and V times back, S-1 -> 0 between
// chunks. A stage's M V forward steps (and as many backward) run in groups of S micro-batches per
// chunk: step k is chunk (k mod S V) / S (backward: V-1 minus that) of micro-batch
// (k / S V) S + k mod S. Hence M must be a multiple of S. Stage s warms up with
// 2 (S-s-1) + (V-1) S forwards (all M V when M = S), alternates, then drains.
//
// Bubble: a chunk's pass takes 1/V of a stage's, and the fill and drain still span S-1 chunk
// passes, so the idle share is (S-1)/(V M + S-1): V times smaller than 1F1B's for M >> S. The
// price: V times the messages (each micro-batch crosses S V - 1 boundaries each way instead of
// S - 1), and a deeper warm-up: stage 0 holds 2 (S-1) + (V-1) S + 1 chunk activations, each 1/V
// of a stage's: (1 + 1/V) S - 1/V stage-activations against 1F1B's S.
//
// Every step is one batch to both ring neighbours (StageStep::exchange): the output going
// forward, the input gradient going back, and whichever of the next input and output gradient
// this stage needs. Megatron's bookkeeping says which chunk a received tensor feeds; a stage
// keeps a queue of them per chunk.
#include <algorithm>
#include <deque>
#include <vector>

#include "nn/parallel/model_parallel/stage_step.h"

namespace ringgrad::nn::parallel::detail {

void interleaved_1f1b(StageStep& step, int stage, int stages, int chunks, int m) {
  const int S = stages, V = chunks, total = m * V;
  const bool first = stage == 0, last = stage == S - 1;
  auto chunk_of = [&](int k, bool forward) {
    const int group = ((k % (S * V)) + S * V) % (S * V);  // k may be negative (Python's %)
    const int c = group / S;
    return forward ? c : V - 1 - c;
  };
  auto micro_batch_of = [&](int k) { return (k / (S * V)) * S + k % S; };
  std::vector<std::deque<Tensor>> inputs(static_cast<std::size_t>(V)), output_grads(static_cast<std::size_t>(V));
  auto pop = [](std::deque<Tensor>& q) {
    Tensor t = std::move(q.front());
    q.pop_front();
    return t;
  };
  auto forward_step = [&](int k) {
    const int c = chunk_of(k, true), mb = micro_batch_of(k);
    const Tensor x = first && c == 0 ? step.first_input(mb) : pop(inputs[static_cast<std::size_t>(c)]);
    const Tensor y = step.forward(mb, x, c);
    return last && c == V - 1 ? Tensor() : y;  // the model's end sends nothing
  };
  auto backward_step = [&](int k) {
    const int c = chunk_of(k, false);
    const Tensor g = last && c == V - 1 ? Tensor() : pop(output_grads[static_cast<std::size_t>(c)]);
    const Tensor dx = step.backward(g, c);
    return first && c == 0 ? Tensor() : dx;  // the model's start sends nothing back
  };
  auto keep = [](std::deque<Tensor>& q, const Tensor& t) { q.push_back(t); };

  const bool all_warmup = m == S;
  const int warmup = all_warmup ? total : std::min(2 * (S - stage - 1) + (V - 1) * S, total);
  const int steady = total - warmup;
  if (!first) keep(inputs[0], step.exchange(Tensor(), true, Tensor(), false).input);

  for (int k = 0; k < warmup; ++k) {
    const Tensor y = forward_step(k);
    const int next_c = chunk_of(k + 1, true);
    const bool recv_input = !(first && next_c == 0) && k != total - 1;
    const bool recv_grad = k == warmup - 1 && !all_warmup && !last;
    const StageStep::Received r = step.exchange(y, recv_input, Tensor(), recv_grad);
    if (recv_input) keep(inputs[static_cast<std::size_t>(next_c)], r.input);
    if (recv_grad) keep(output_grads[static_cast<std::size_t>(V - 1)], r.output_grad);
  }
  for (int k = 0; k < steady; ++k) {
    const int fk = k + warmup, bk = k;
    const Tensor y = forward_step(fk);
    const Tensor dx = backward_step(bk);
    // Which chunk the next received input feeds: stage 0 receives what stage S-1 sent S-1
    // steps before; likewise the gradients stage S-1 receives from stage 0.
    bool recv_input = true, recv_grad = true;
    int next_fc, next_bc;
    if (first) {
      next_fc = chunk_of(fk - (S - 1), true);
      if (next_fc == V - 1) recv_input = false;
      ++next_fc;
    } else {
      next_fc = chunk_of(fk + 1, true);
    }
    if (last) {
      next_bc = chunk_of(bk - (S - 1), false);
      if (next_bc == 0) recv_grad = false;
      --next_bc;
    } else {
      next_bc = chunk_of(bk + 1, false);
    }
    if (k == steady - 1) recv_input = false;
    const StageStep::Received r = step.exchange(y, recv_input, dx, recv_grad);
    if (recv_input) keep(inputs[static_cast<std::size_t>(next_fc)], r.input);
    if (recv_grad) keep(output_grads[static_cast<std::size_t>(next_bc)], r.output_grad);
  }
  if (all_warmup && !last)
    keep(output_grads[static_cast<std::size_t>(V - 1)], step.exchange(Tensor(), false, Tensor(), true).output_grad);
  for (int k = steady; k < total; ++k) {
    const Tensor dx = backward_step(k);
    const int next_bc = chunk_of(k + 1, false);
    const bool recv_grad = !(last && next_bc == V - 1) && k != total - 1;
    const StageStep::Received r = step.exchange(Tensor(), false, dx, recv_grad);
    if (recv_grad) keep(output_grads[static_cast<std::size_t>(next_bc)], r.output_grad);
  }
}

}  // namespace ringgrad::nn::parallel::detail
