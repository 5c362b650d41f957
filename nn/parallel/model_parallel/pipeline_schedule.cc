// The two pipeline schedules as sequences of forward and backward slots, and the point-to-point
// exchanges between them (Megatron-LM's recv_forward, send_forward, send_forward_recv_backward,
// send_backward_recv_forward, recv_backward, send_backward).
#include "nn/parallel/model_parallel/pipeline_schedule.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <stdexcept>

#include <fmt/format.h>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/elementwise.h"
#include "tensor/view.h"
#include "trace/trace.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Communicator;
using collectives::P2POp;
using Clock = std::chrono::steady_clock;

// One micro-batch in flight on this stage: its input (a leaf on all but the first stage) and
// its output (the logits' loss on the last stage).
struct InFlight {
  int index;
  Tensor input, output;
};

// This stage's part of one pipeline step: its forward and backward slots, the exchanges with
// its neighbours, and what the step reports. The schedules below call them in their order.
class StageStep {
 public:
  StageStep(PipelineStage& stage, Communicator& group, const Tensor& idx, const Tensor& targets, int micro_batches)
      : stage_(stage), group_(group), idx_(idx), targets_(targets), m_(micro_batches) {
    result_.start_s = now();
    const GPTConfig& c = stage.config();
    mb_ = idx.size(0) / micro_batches;
    activation_shape_ = {mb_, stage.activation_length(idx.size(1)), c.n_embd};
    dtype_ = c.dtype;
    device_ = idx.device();  // the stage's: activations arrive where it computes
  }

  // --- Slots ---------------------------------------------------------------------------------
  Tensor forward(int m, const Tensor& input) {
    const trace::Span span(trace::enabled() ? trace::intern(fmt::format("F{}", m)) : "", "pipeline");
    const double t0 = now();
    Tensor out = stage_(input);
    if (stage_.is_last()) {
      const Tensor y = kernels::contiguous(kernels::narrow(targets_, 0, m * mb_, mb_));
      out = stage_.loss(out, y) * (1.0 / m_);
      loss_ += out.item<double>();
    }
    result_.events.push_back({'F', m, t0, now()});
    live_.push_back({m, input, out});
    result_.peak_live_micro_batches = std::max(result_.peak_live_micro_batches, live_.size());
    return out;
  }

  // Backward of the oldest micro-batch in flight; returns its input's gradient (undefined on
  // the first stage).
  Tensor backward(const Tensor& output_grad) {
    InFlight f = std::move(live_.front());
    live_.pop_front();
    const trace::Span span(trace::enabled() ? trace::intern(fmt::format("B{}", f.index)) : "", "pipeline");
    const double t0 = now();
    if (stage_.is_last()) ringgrad::backward(f.output);
    else ringgrad::backward(f.output, output_grad);
    result_.events.push_back({'B', f.index, t0, now()});
    return stage_.is_first() ? Tensor() : f.input.grad();
  }

  // --- Exchanges with the neighbours -------------------------------------------------------
  Tensor first_input(int m) const { return kernels::contiguous(kernels::narrow(idx_, 0, m * mb_, mb_)); }

  Tensor recv_forward(int m) {
    if (stage_.is_first()) return first_input(m);
    Tensor x = Tensor::empty(activation_shape_, dtype_, device_);
    group_.recv(synced_buffer(x), stage_.stage() - 1, kTag);
    return x.set_requires_grad(true);
  }
  void send_forward(const Tensor& y) {
    if (!stage_.is_last()) group_.send(synced_buffer(kernels::contiguous(y.detach())), stage_.stage() + 1, kTag);
  }
  Tensor recv_backward() {
    if (stage_.is_last()) return Tensor();
    Tensor g = Tensor::empty(activation_shape_, dtype_, device_);
    group_.recv(synced_buffer(g), stage_.stage() + 1, kTag);
    return g;
  }
  void send_backward(const Tensor& g) {
    if (!stage_.is_first()) group_.send(synced_buffer(kernels::contiguous(g)), stage_.stage() - 1, kTag);
  }
  // Send y forward and receive the gradient of an earlier output from the same neighbour, as one batch.
  Tensor send_forward_recv_backward(const Tensor& y) {
    if (stage_.is_last()) return Tensor();
    const Tensor out = kernels::contiguous(y.detach());
    Tensor g = Tensor::empty(activation_shape_, dtype_, device_);
    group_.batch_send_recv({P2POp::send(synced_buffer(out), stage_.stage() + 1), P2POp::recv(synced_buffer(g), stage_.stage() + 1)}, kTag);
    return g;
  }
  // Send a gradient back and receive the next micro-batch's input from the same neighbour, as one batch.
  Tensor send_backward_recv_forward(const Tensor& g, int m) {
    if (stage_.is_first()) return first_input(m);
    const Tensor back = kernels::contiguous(g);
    Tensor x = Tensor::empty(activation_shape_, dtype_, device_);
    group_.batch_send_recv({P2POp::send(synced_buffer(back), stage_.stage() - 1), P2POp::recv(synced_buffer(x), stage_.stage() - 1)}, kTag);
    return x.set_requires_grad(true);
  }

  // --- The end of the step -------------------------------------------------------------------
  PipelineStepResult finish() {
    sum_tied_grads();
    // The loss is known on the last stage; every stage reports it.
    group_.broadcast(collectives::ConstBuffer(&loss_, 1, collectives::DType::kFloat64),
                     collectives::Buffer(&loss_, 1, collectives::DType::kFloat64), group_.world_size() - 1);
    result_.loss = loss_;
    result_.end_s = now();
    return std::move(result_);
  }

 private:
  static constexpr uint64_t kTag = 0x9199;  // order alone matches: one direction carries one kind

  // The first and the last stage each hold wte; summing their gradients keeps them equal.
  void sum_tied_grads() {
    if (!stage_.tied_copies() || !(stage_.is_first() || stage_.is_last())) return;
    Tensor& w = stage_.wte_weight();
    if (!w.grad().defined()) w.set_grad(Tensor::zeros(w.shape(), w.dtype(), w.device()));
    const Tensor mine = kernels::clone(w.grad());
    Tensor theirs = Tensor::empty(w.shape(), w.dtype(), w.device());
    const int other = stage_.is_first() ? stage_.stages() - 1 : 0;
    group_.batch_send_recv({P2POp::send(synced_buffer(mine), other), P2POp::recv(synced_buffer(theirs), other)}, kTag + 1);
    kernels::add_(w.grad(), theirs);
  }

  static double now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

  PipelineStage& stage_;
  Communicator& group_;
  const Tensor& idx_;
  const Tensor& targets_;
  int m_;
  std::int64_t mb_;
  Shape activation_shape_;
  DType dtype_;
  Device device_;
  std::deque<InFlight> live_;
  double loss_ = 0;
  PipelineStepResult result_;
};

void check_arguments(const PipelineStage& stage, const Communicator& group, const Tensor& idx, int micro_batches) {
  if (group.world_size() != stage.stages())
    throw std::invalid_argument(fmt::format("pipeline_step on {}: the group has {} ranks for {} stages",
                                            collectives::describe_rank(group.group()), group.world_size(), stage.stages()));
  if (micro_batches < 1 || idx.size(0) % micro_batches != 0)
    throw std::invalid_argument(fmt::format("pipeline_step on {}: {} micro-batches do not divide a batch of {} (the "
                                            "rows this pipeline trains on)", collectives::describe_rank(group.group()),
                                            micro_batches, idx.size(0)));
}

}  // namespace

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "afab") return PipelineSchedule::kAllForwardAllBackward;
  if (name == "1f1b") return PipelineSchedule::kOneForwardOneBackward;
  throw std::invalid_argument(fmt::format("pipeline schedule '{}': choose afab (GPipe) or 1f1b", name));
}

PipelineStepResult pipeline_step(PipelineStage& stage, Communicator& group, const Tensor& idx, const Tensor& targets,
                                 int micro_batches, PipelineSchedule schedule) {
  check_arguments(stage, group, idx, micro_batches);
  StageStep step(stage, group, idx, targets, micro_batches);
  const int m = micro_batches;
  if (schedule == PipelineSchedule::kAllForwardAllBackward) {
    for (int i = 0; i < m; ++i) step.send_forward(step.forward(i, step.recv_forward(i)));
    for (int i = 0; i < m; ++i) step.send_backward(step.backward(step.recv_backward()));
    return step.finish();
  }
  // 1F1B: fill the pipe, alternate, drain.
  const int warmup = std::min(stage.stages() - stage.stage() - 1, m), steady = m - warmup;
  for (int i = 0; i < warmup; ++i) step.send_forward(step.forward(i, step.recv_forward(i)));
  Tensor input = steady > 0 ? step.recv_forward(warmup) : Tensor();
  for (int i = 0; i < steady; ++i) {
    const Tensor output_grad = step.send_forward_recv_backward(step.forward(warmup + i, input));
    const Tensor input_grad = step.backward(output_grad);
    if (i == steady - 1) step.send_backward(input_grad);
    else input = step.send_backward_recv_forward(input_grad, warmup + i + 1);
  }
  for (int i = 0; i < warmup; ++i) step.send_backward(step.backward(step.recv_backward()));
  return step.finish();
}

}  // namespace ringgrad::nn::parallel
