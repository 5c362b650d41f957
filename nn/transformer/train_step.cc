// The plain single-process step (zero_grad, forward, backward, clip, AdamW at this lr), the
// weight-decay grouping (matrices decay, vectors do not) and the loss estimated over random
// batches in eval mode without a graph.
#include "nn/transformer/train_step.h"

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "tensor/op_profile.h"

namespace ringgrad::nn {

std::vector<ParamGroup> weight_decay_groups(const Module& model, double weight_decay) {
  ParamGroup decay{{}, weight_decay}, no_decay{{}, 0.0};
  for (const Tensor& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).params.push_back(p);
  return {decay, no_decay};
}

Tensor training_loss(const GPT& model, const Tensor& logits, const Tensor& y) {
  const Tensor ce = cross_entropy(logits, y);
  const Tensor aux = model.aux_loss();
  return aux.defined() ? ce + aux : ce;
}

StepResult train_step(GPT& model, AdamW& optimizer, const data::Batch& batch, double lr, double grad_clip) {
  optimizer.zero_grad();
  // The data loaders make CPU batches; the model's device is where the step runs.
  const Tensor loss = training_loss(model, model(batch.x.to(model.device())), batch.y.to(model.device()));
  backward(loss);
  profile::ProfileScope scope(profile::OpKind::Optimizer);
  const double norm = grad_clip > 0 ? clip_grad_norm_(model.parameters(), grad_clip) : 0.0;
  optimizer.set_lr(lr);
  optimizer.step();
  return {loss.item<double>(), norm};
}

BatchLoss batch_loss(GPT& model) {
  return [&model](const Tensor& x, const Tensor& y) {
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    const double loss = cross_entropy(model(x.to(model.device())), y.to(model.device())).item<double>();
    model.train(was_training);
    return loss;
  };
}

double estimate_loss(const BatchLoss& loss, const data::CharDataset& dataset, data::Split split, std::int64_t batches,
                     std::int64_t batch_size, std::int64_t block_size, std::uint64_t seed) {
  Generator gen(seed);
  double total = 0;
  for (std::int64_t i = 0; i < batches; ++i) {
    const data::Batch b = dataset.get_batch(split, batch_size, block_size, gen);
    total += loss(b.x, b.y);
  }
  return total / static_cast<double>(batches);
}

double estimate_loss(GPT& model, const data::CharDataset& dataset, data::Split split, std::int64_t batches,
                     std::int64_t batch_size, std::uint64_t seed) {
  return estimate_loss(batch_loss(model), dataset, split, batches, batch_size, model.config().block_size, seed);
}

SplitLoss full_split_loss(const BatchLoss& loss, const data::CharDataset& dataset, data::Split split,
                          std::int64_t batch_size, std::int64_t block_size) {
  const std::int64_t t = block_size, n = dataset.window_count(split, t);
  const std::int64_t full = (dataset.size(split) - 1) / t;  // windows of length T; the rest is one shorter window
  double sum = 0;
  std::int64_t tokens = 0;
  auto add = [&](std::int64_t first, std::int64_t count) {
    const data::Batch b = dataset.windows(split, t, first, count);
    sum += loss(b.x, b.y) * static_cast<double>(b.y.numel());
    tokens += b.y.numel();
  };
  for (std::int64_t first = 0; first < full; first += batch_size) add(first, std::min(batch_size, full - first));
  if (full < n) add(full, 1);
  return {sum / static_cast<double>(tokens), tokens};
}

SplitLoss full_split_loss(GPT& model, const data::CharDataset& dataset, data::Split split, std::int64_t batch_size) {
  return full_split_loss(batch_loss(model), dataset, split, batch_size, model.config().block_size);
}

}  // namespace ringgrad::nn
