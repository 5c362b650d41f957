// StageStep: the slots and exchanges the pipeline schedules are made of.
#include "nn/parallel/model_parallel/stage_step.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/elementwise.h"
#include "tensor/view.h"
#include "trace/trace.h"

namespace ringgrad::nn::parallel::detail {
namespace {

using collectives::P2POp;

constexpr uint64_t kTag = 0x9199;  // order alone matches: each (peer, direction) carries its messages in schedule order

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

const char* span_name(char kind, int m, int chunk) {
  if (!trace::enabled()) return "";
  return trace::intern(chunk == 0 ? fmt::format("{}{}", kind, m) : fmt::format("{}{}.{}", kind, m, chunk));
}

}  // namespace

StageStep::StageStep(PipelineStage& stage, collectives::Communicator& group, const Tensor& idx, const Tensor& targets,
                     int micro_batches, bool defer_weight_grads)
    : stage_(stage), group_(group), idx_(idx), targets_(targets), m_(micro_batches),
      defer_weight_grads_(defer_weight_grads), live_(static_cast<std::size_t>(stage.chunks())) {
  result_.start_s = now();
  const GPTConfig& c = stage.config();
  mb_ = idx.size(0) / micro_batches;
  activation_shape_ = {mb_, stage.activation_length(idx.size(1)), c.n_embd};
  dtype_ = c.dtype;
  device_ = idx.device();  // the stage's: activations arrive where it computes
}

Tensor StageStep::forward(int m, const Tensor& input, int chunk) {
  const trace::Span span(span_name('F', m, chunk), "pipeline");
  const double t0 = now();
  Tensor out = stage_.forward_chunk(chunk, input);
  // The chunk's MoE layers' load-balancing loss joins the micro-batch's loss here, / M as one
  // process's accumulation scales it: on the last chunk into the loss, elsewhere beside the output.
  const Tensor aux = stage_.aux_loss(chunk);
  Tensor own;
  if (stage_.is_last_chunk(chunk)) {
    const Tensor y = kernels::contiguous(kernels::narrow(targets_, 0, m * mb_, mb_));
    const Tensor ce = stage_.loss(out, y);
    out = (aux.defined() ? ce + aux : ce) * (1.0 / m_);
    loss_ += out.item<double>();
  } else if (aux.defined()) {
    own = aux * (1.0 / m_);
    loss_ += own.item<double>();
  }
  result_.events.push_back({'F', m, t0, now(), chunk});
  live_[static_cast<std::size_t>(chunk)].push_back({m, input, out, own});
  result_.peak_live_micro_batches = std::max(result_.peak_live_micro_batches, ++held_);
  return out;
}

Tensor StageStep::backward(const Tensor& output_grad, int chunk) {
  std::deque<InFlight>& live = live_[static_cast<std::size_t>(chunk)];
  InFlight f = std::move(live.front());
  live.pop_front();
  const trace::Span span(span_name('B', f.index, chunk), "pipeline");
  const double t0 = now();
  {
    std::vector<WeightGradPass> deferred;
    std::optional<DeferWeightGrads> defer;
    if (defer_weight_grads_) defer.emplace(deferred);
    if (stage_.is_last_chunk(chunk)) ringgrad::backward(f.output);
    else if (f.aux.defined()) ringgrad::backward(sum(f.output * output_grad) + f.aux);  // one pass: d/d output = output_grad
    else ringgrad::backward(f.output, output_grad);
    if (defer_weight_grads_) weight_passes_.push_back({f.index, chunk, std::move(deferred)});
    else --held_;
  }
  result_.events.push_back({'B', f.index, t0, now(), chunk});
  return stage_.is_first_chunk(chunk) ? Tensor() : f.input.grad();
}

void StageStep::weight() {
  WeightPass w = std::move(weight_passes_.front());
  weight_passes_.pop_front();
  const trace::Span span(span_name('W', w.index, w.chunk), "pipeline");
  const double t0 = now();
  for (WeightGradPass& pass : w.passes) pass();
  w.passes.clear();  // lets go of the saved inputs and output gradients
  --held_;
  result_.events.push_back({'W', w.index, t0, now(), w.chunk});
}

Tensor StageStep::first_input(int m) const { return kernels::contiguous(kernels::narrow(idx_, 0, m * mb_, mb_)); }

Tensor StageStep::received_activation() const { return Tensor::empty(activation_shape_, dtype_, device_); }

Tensor StageStep::recv_forward(int m) {
  if (stage_.is_first()) return first_input(m);
  Tensor x = received_activation();
  group_.recv(synced_buffer(x), stage_.stage() - 1, kTag);
  return x.set_requires_grad(true);
}

void StageStep::send_forward(const Tensor& y) {
  if (!stage_.is_last()) group_.send(synced_buffer(kernels::contiguous(y.detach())), stage_.stage() + 1, kTag);
}

Tensor StageStep::recv_backward() {
  if (stage_.is_last()) return Tensor();
  Tensor g = received_activation();
  group_.recv(synced_buffer(g), stage_.stage() + 1, kTag);
  return g;
}

void StageStep::send_backward(const Tensor& g) {
  if (!stage_.is_first()) group_.send(synced_buffer(kernels::contiguous(g)), stage_.stage() - 1, kTag);
}

Tensor StageStep::send_forward_recv_backward(const Tensor& y) {
  if (stage_.is_last()) return Tensor();
  const Tensor out = kernels::contiguous(y.detach());
  Tensor g = received_activation();
  group_.batch_send_recv({P2POp::send(synced_buffer(out), stage_.stage() + 1), P2POp::recv(synced_buffer(g), stage_.stage() + 1)}, kTag);
  return g;
}

Tensor StageStep::send_backward_recv_forward(const Tensor& g, int m) {
  if (stage_.is_first()) return first_input(m);
  const Tensor back = kernels::contiguous(g);
  Tensor x = received_activation();
  group_.batch_send_recv({P2POp::send(synced_buffer(back), stage_.stage() - 1), P2POp::recv(synced_buffer(x), stage_.stage() - 1)}, kTag);
  return x.set_requires_grad(true);
}

StageStep::Received StageStep::exchange(const Tensor& output, bool recv_input, const Tensor& input_grad,
                                        bool recv_output_grad) {
  const int stages = stage_.stages(), next = (stage_.stage() + 1) % stages, prev = (stage_.stage() + stages - 1) % stages;
  // Sends, then receives, each forward before backward: with two stages the next and the
  // previous are one rank, and both sides then list the same order.
  const Tensor out = output.defined() ? kernels::contiguous(output.detach()) : Tensor();
  const Tensor back = input_grad.defined() ? kernels::contiguous(input_grad) : Tensor();
  Received r;
  std::vector<P2POp> ops;
  if (out.defined()) ops.push_back(P2POp::send(synced_buffer(out), next));
  if (back.defined()) ops.push_back(P2POp::send(synced_buffer(back), prev));
  if (recv_input) {
    r.input = received_activation();
    ops.push_back(P2POp::recv(synced_buffer(r.input), prev));
  }
  if (recv_output_grad) {
    r.output_grad = received_activation();
    ops.push_back(P2POp::recv(synced_buffer(r.output_grad), next));
  }
  if (!ops.empty()) group_.batch_send_recv(std::move(ops), kTag);
  if (recv_input) r.input.set_requires_grad(true);
  return r;
}

PipelineStepResult StageStep::finish() {
  sum_tied_grads();
  // The loss is the last stage's, plus the other stages' load-balancing losses: every stage reports the sum.
  group_.all_reduce(collectives::ConstBuffer(&loss_, 1, collectives::DType::kFloat64),
                    collectives::Buffer(&loss_, 1, collectives::DType::kFloat64), collectives::ReduceOp::SUM);
  result_.loss = loss_;
  result_.end_s = now();
  return std::move(result_);
}

// The first and the last stage each hold wte; summing their gradients keeps them equal.
void StageStep::sum_tied_grads() {
  if (!stage_.tied_copies() || !(stage_.is_first() || stage_.is_last())) return;
  Tensor& w = stage_.wte_weight();
  if (!w.grad().defined()) w.set_grad(Tensor::zeros(w.shape(), w.dtype(), w.device()));
  const Tensor mine = kernels::clone(w.grad());
  Tensor theirs = Tensor::empty(w.shape(), w.dtype(), w.device());
  const int other = stage_.is_first() ? stage_.stages() - 1 : 0;
  group_.batch_send_recv({P2POp::send(synced_buffer(mine), other), P2POp::recv(synced_buffer(theirs), other)}, kTag + 1);
  kernels::add_(w.grad(), theirs);
}

}  // namespace ringgrad::nn::parallel::detail
