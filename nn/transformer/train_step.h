// One step of GPT training and the loss estimate, shared by examples/train_gpt,
// bench/train_bench and the tests. Kept to plain calls (forward, backward, optimizer step) so a
// data-parallel wrapper can take over the backward and the step, as nn/parallel does.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "nn/data/char_dataset.h"
#include "nn/optim.h"
#include "nn/transformer/gpt.h"

namespace ringgrad::nn {

/// Parameter groups for AdamW's decoupled weight decay (Loshchilov & Hutter 2019) as nanoGPT
/// makes them: `weight_decay` for every parameter of 2 or more dims (Linear weights and the
/// wte/wpe tables), 0 for biases and LayerNorm parameters.
std::vector<ParamGroup> weight_decay_groups(const Module& model, double weight_decay);

/// The training objective of logits [B, T, V] (the model's last forward) against targets
/// y [B, T]: the cross-entropy plus, with experts, the model's load-balancing loss
/// (GPT::aux_loss). Evaluation reports the cross-entropy alone.
Tensor training_loss(const GPT& model, const Tensor& logits, const Tensor& y);

struct StepResult {
  double loss;       // mean cross-entropy of the batch, before the update
  double grad_norm;  // global L2 norm of the gradients, before clipping
};

/// zero_grad, logits = model(batch.x), loss = training_loss(model, logits, batch.y) (the batch is moved
/// to the model's device first, when it is not there), backward
/// (the graph and its activations are freed as it runs), clip_grad_norm_(grad_clip) unless
/// grad_clip is 0, optimizer.set_lr(lr), optimizer.step().
StepResult train_step(GPT& model, AdamW& optimizer, const data::Batch& batch, double lr, double grad_clip);

/// The mean loss of one batch (inputs, targets) under some layout of the model, in eval mode
/// without a graph: what the estimates below average. A collective where the model is split.
using BatchLoss = std::function<double(const Tensor& x, const Tensor& y)>;

/// model's BatchLoss: cross-entropy of model(x) against y, on the model's device.
BatchLoss batch_loss(GPT& model);

/// Mean loss over `batches` batches of `split`, drawn from a Generator seeded with `seed` (the
/// same batches at every call, so estimates are comparable), in eval mode without a graph.
double estimate_loss(GPT& model, const data::CharDataset& dataset, data::Split split, std::int64_t batches,
                     std::int64_t batch_size, std::uint64_t seed);
/// The same, for windows of `block_size`, with `loss` computing each batch's loss.
double estimate_loss(const BatchLoss& loss, const data::CharDataset& dataset, data::Split split, std::int64_t batches,
                     std::int64_t batch_size, std::int64_t block_size, std::uint64_t seed);

/// The loss on the whole split, every token predicted once (CharDataset::windows, in batches of
/// `batch_size` windows): the mean over all size - 1 predictions, in eval mode without a graph.
/// What the fixed-time contest reports (train_gpt --eval_full, and after --time_budget).
struct SplitLoss {
  double loss = 0;
  std::int64_t tokens = 0;
};
SplitLoss full_split_loss(GPT& model, const data::CharDataset& dataset, data::Split split, std::int64_t batch_size);
/// The same, for windows of `block_size`, with `loss` computing each batch's loss.
SplitLoss full_split_loss(const BatchLoss& loss, const data::CharDataset& dataset, data::Split split,
                          std::int64_t batch_size, std::int64_t block_size);

}  // namespace ringgrad::nn
