// What the model-parallel tests share: a small float64 GPT, random token batches, one process's
// training step (the reference every layout is held to), a grid's data-parallel strategy with
// the reference's AdamW (or Muon + AdamW), the largest difference of two
// tensors, and the piece of a whole GPT parameter a rank of a tensor-parallel group should
// hold, written out from docs/model_parallel.md's layout (not taken from the library under test).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/muon_adamw.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/sharded_muon.h"
#include "nn/parallel/grid/grid_training.h"
#include "nn/parallel/model_parallel/tensor_parallel_muon.h"
#include "nn/transformer/gpt.h"
#include "tensor/random.h"
#include "tensor/tensor.h"
#include "tensor/view.h"

namespace ringgrad::test {

/// A float64 GPT of `layers` blocks, `heads` heads, C `channels`, T 8, V `vocab`.
inline nn::GPTConfig small_gpt(std::int64_t layers, std::int64_t heads, std::int64_t channels, std::int64_t vocab,
                               bool tied = true) {
  nn::GPTConfig c;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_embd = channels;
  c.block_size = 8;
  c.vocab_size = vocab;
  c.tie_weights = tied;
  c.dtype = DType::Float64;
  return c;
}

/// Inputs and next-token targets [rows, 8], ids below `vocab`, drawn from `gen`.
inline std::pair<Tensor, Tensor> random_batch(Generator& gen, std::int64_t rows, std::int64_t vocab) {
  std::vector<std::int64_t> x(static_cast<std::size_t>(rows * 8)), y(x.size());
  for (auto& v : x) v = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(vocab)));
  for (auto& v : y) v = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(vocab)));
  return {Tensor::from_vector(x, {rows, 8}), Tensor::from_vector(y, {rows, 8})};
}

/// One process's step on the whole batch: loss, backward, the optimizer's step; returns the loss
/// (the gradients stay in the model).
inline double one_process_step(nn::GPT& model, nn::Optimizer& optimizer, const Tensor& x, const Tensor& y) {
  const std::int64_t rows = x.numel(), vocab = model.config().vocab_size;
  const Tensor loss = cross_entropy(reshape(model(x), {rows, vocab}), reshape(y, {rows}));
  model.zero_grad();
  backward(loss);
  optimizer.step();
  return loss.item<double>();
}

/// The AdamW both sides of every comparison use.
inline const nn::AdamOptions kTestAdam{0.01, 0.9, 0.95, 1e-8};

/// `strategy` over the grid's dp group around `stage`, with kTestAdam and weight decay 0.1.
inline std::unique_ptr<nn::parallel::DataParallel> grid_strategy(const std::string& strategy,
                                                                 std::shared_ptr<nn::parallel::PipelineStage> stage,
                                                                 nn::parallel::GridGroups& groups) {
  return nn::parallel::grid_data_parallel(strategy, std::move(stage), groups, 0.1, [](std::vector<nn::ParamGroup> g) {
    return std::make_unique<nn::AdamW>(std::move(g), kTestAdam);
  });
}

/// The Muon both sides of the Muon comparisons use (beside kTestAdam on the rest).
inline const nn::MuonOptions kTestMuon{0.05, 0.9};

/// One process's Muon on the blocks' matrices and AdamW on the rest, weight decay 0.1.
inline std::unique_ptr<nn::Optimizer> one_process_muon(const nn::GPT& model) {
  return std::make_unique<nn::MuonWithAdamW>(nn::muon_adamw_groups(model, 0.1), 1, kTestMuon, kTestAdam);
}

/// `strategy` (ddp or ddp-naive) over the grid's dp group around `stage`, with Muon + AdamW as
/// one_process_muon's: Muon's work shared over dp, its split matrices gathered over tp.
inline std::unique_ptr<nn::parallel::DataParallel> grid_muon_strategy(const std::string& strategy,
                                                                      std::shared_ptr<nn::parallel::PipelineStage> stage,
                                                                      nn::parallel::GridGroups& groups) {
  const nn::MuonOptions muon =
      nn::parallel::split_over(nn::parallel::shard_over(kTestMuon, *groups.dp), *stage, *groups.tp);
  std::vector<nn::ParamGroup> param_groups = nn::muon_adamw_groups(*stage, 0.1);
  return nn::parallel::grid_data_parallel(strategy, std::move(stage), groups, std::move(param_groups),
                                          [muon](std::vector<nn::ParamGroup> g) {
                                            return std::make_unique<nn::MuonWithAdamW>(std::move(g), 1, muon, kTestAdam);
                                          });
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = kernels::contiguous(a.detach()).to_vector<double>(), y = kernels::contiguous(b.detach()).to_vector<double>();
  if (x.size() != y.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// This rank's 1/p slice of t along dim.
inline Tensor slice(const Tensor& t, std::int64_t dim, const collectives::Communicator& group) {
  const std::int64_t n = t.size(dim) / group.world_size();
  return kernels::narrow(t.detach(), dim, group.rank() * n, n);
}

// This rank's piece of a whole GPT parameter, as docs/model_parallel.md lays them out (written
// out here, not taken from the library): dim 0 slices of each of q, k, v for c_attn, of c_fc
// and of the padded wte; dim 1 slices of the c_proj weights; everything else whole.
inline Tensor expected_piece(const std::string& name, const Tensor& whole, const collectives::Communicator& group) {
  const std::int64_t p = group.world_size(), r = group.rank();
  auto rows = [&](const Tensor& t, int parts) {
    const std::int64_t part = t.size(0) / parts, n = part / p;
    std::vector<double> out;
    const auto all = kernels::contiguous(t.detach()).to_vector<double>();
    const std::int64_t width = t.numel() / t.size(0);
    for (int i = 0; i < parts; ++i)
      out.insert(out.end(), all.begin() + (i * part + r * n) * width, all.begin() + (i * part + r * n + n) * width);
    Shape shape = t.shape();
    shape[0] = n * parts;
    return Tensor::from_vector(out, shape);
  };
  if (name == "wte.weight" || name == "lm_head.weight") {
    Tensor padded = Tensor::zeros({(whole.size(0) + p - 1) / p * p, whole.size(1)}, DType::Float64);
    kernels::copy_(kernels::narrow(padded, 0, 0, whole.size(0)), whole.detach());
    return rows(padded, 1);
  }
  if (name.find("c_attn") != std::string::npos) return rows(whole, 3);
  if (name.find("c_fc") != std::string::npos) return rows(whole, 1);
  if (name.ends_with("c_proj.weight")) return slice(whole, 1, group);
  return whole.detach();
}

}  // namespace ringgrad::test
