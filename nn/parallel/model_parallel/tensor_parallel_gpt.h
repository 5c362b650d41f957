// A GPT split over a tensor-parallel group, Megatron-LM's layout (Shoeybi et al. 2019):
//
//   wte        vocabulary-parallel: rank q holds ids [q V'/p, (q+1) V'/p), V' = V padded to a
//              multiple of p with zero rows; the tied logits use the same slice
//   wpe, ln_*  replicated: every rank holds them whole and computes them on the whole stream
//              (no wpe with rotary embeddings)
//   attention  heads split: c_attn column-parallel by parts (this rank's q, k and v of its
//              H/p heads; QK-norm and rotary embeddings act per head, so on those alone),
//              attention on those heads alone, c_proj row-parallel
//   MLP        c_fc column-parallel (4C/p hidden units per rank), GELU or ReLU^2 on them
//              (elementwise), c_proj row-parallel
//   MoE        (a block's MLP with config.moe_experts) replicated whole, router and experts:
//              without sequence parallelism every rank holds the same [B, T, C] tokens, so each
//              routes and runs them as one process does (Megatron's default without expert
//              tensor parallelism); the gradients come out equal on every rank with no
//              reduction. Under sequence or context parallelism a rank holds a part of the
//              positions, which would route with another capacity: refused.
//   loss       vocabulary-parallel cross-entropy: the [B, T, V] logits are never gathered
//
// Per block: two all-reduces of [B, T, C] forward (the row-parallel outputs) and two backward
// (the column-parallel inputs); plus the embedding's and the logits' input, and three of
// [B T] for the loss. Built from one process's GPT (same seed), so it starts where that one
// does; parameter names are the GPT's.
//
// With sequence parallelism (Korthikanti et al. 2022) the stream between the layers is cut
// along the sequence: each rank holds [B, T/p, C] and runs the LayerNorms, the residual adds,
// wpe and the dropouts on its T/p positions only; each all-reduce becomes a reduce-scatter
// (after the row-parallel layers and the embedding) and an all-gather (before the column-
// parallel ones and the head). The replicated parameters then see only T/p of the sequence
// each: all_reduce_replicated_grads() sums their gradients after backward.
//
// Activation recomputation (config.recompute, autograd/checkpoint.h) works as on one process:
// a recomputed block replays its all-reduces (or reduce-scatters and all-gathers) during
// backward, in the same order on every rank of the group, as Megatron's full recomputation does.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "collectives/communicator.h"
#include "nn/parallel/model_parallel/tensor_parallel_linear.h"
#include "nn/parallel/model_parallel/vocab_parallel.h"
#include "nn/transformer/gpt.h"

namespace ringgrad::nn::parallel {

/// A block's attention with this rank's H/p heads. x: [B, T, C] -> [B, T, C] (whole). Given a
/// context-parallel group of more than one rank, x holds this rank's T/c positions and the
/// heads attend over the whole sequence by ring attention (ring_attention.h); rotary
/// embeddings turn those positions by their index in the whole sequence (r T/c onwards).
class TensorParallelAttention : public Module {
 public:
  TensorParallelAttention(const CausalSelfAttention& full, const GPTConfig& config, collectives::Communicator& group,
                          collectives::Communicator* context = nullptr);
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<ColumnParallelLinear> c_attn;
  std::shared_ptr<RowParallelLinear> c_proj;

 private:
  Tensor attention_core(const Tensor& qkv);

  std::int64_t heads_here_;
  double dropout_;
  bool rotary_, qk_norm_;
  collectives::Communicator* context_;
  bool recompute_;
};

/// A block's MLP with this rank's 4C/p hidden units. x: [B, T, C] -> [B, T, C] (whole).
class TensorParallelMLP : public Module {
 public:
  TensorParallelMLP(const MLP& full, const GPTConfig& config, collectives::Communicator& group);
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<ColumnParallelLinear> c_fc;
  std::shared_ptr<RowParallelLinear> c_proj;

 private:
  double dropout_;
  bool relu_squared_;
};

class TensorParallelBlock : public Module {
 public:
  /// Throws std::invalid_argument when `full` holds a MoE and a context group of more than one
  /// rank is given (a cp rank's positions are not a whole forward call's tokens).
  TensorParallelBlock(const Block& full, const GPTConfig& config, collectives::Communicator& group,
                      collectives::Communicator* context = nullptr);
  Tensor forward(const Tensor& x) override;
  /// Sequence parallelism on (or off) for the block's split layers. Throws std::invalid_argument
  /// for on with a MoE (each rank would route T/p of the positions).
  void set_sequence_parallel(bool on);

  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<TensorParallelAttention> attn;
  std::shared_ptr<TensorParallelMLP> mlp;  // null when moe is set
  std::shared_ptr<MoE> moe;                // registered as "mlp", whole on every rank; null without experts

 private:
  Tensor residual_branches(const Tensor& x);
  bool recompute_;
};

/// How a GPT parameter is held by the ranks of a TensorParallelGPT: whole on each (dim -1),
/// or cut along `dim` into p slices of each of `parts` blocks (rank q holds slice q of every
/// block); wte's rows are first padded to a multiple of p.
struct ShardSpec {
  int dim = -1;
  int parts = 1;
  bool padded = false;
};
/// The spec of the GPT parameter named `name` (GPT::named_parameters' names); a MoE's router
/// and experts are whole on every rank.
ShardSpec shard_spec(std::string_view name);
/// The parameters of `model` (a TensorParallelGPT or a stage of one) whole on every tp rank.
std::vector<Tensor> replicated_parameters(const Module& model);
/// Rank `rank`'s piece of the whole parameter `whole` under `spec`, for a group of `p`.
Tensor shard_of(const Tensor& whole, const ShardSpec& spec, int rank, int p);
/// Collective of `group`: the whole tensor whose piece under `spec` this rank holds in `piece`
/// (shard_of's inverse, all-gathered; wte's padding rows kept); a copy when it is not cut.
Tensor gather_shards(const Tensor& piece, const ShardSpec& spec, collectives::Communicator& group);

class TensorParallelGPT : public Module {
 public:
  /// Cuts `full` (tied weights) for `group`. Throws std::invalid_argument, the same on every
  /// rank, when n_head does not divide by the group size or the weights are not tied.
  TensorParallelGPT(const GPT& full, collectives::Communicator& group, bool sequence_parallel = false);

  /// idx [B, T] -> this rank's slice of the logits, [B, T, V'/p].
  Tensor forward(const Tensor& idx) override;
  /// Mean cross-entropy of the logits against targets [B, T], from the slices. With sequence
  /// parallelism T must divide by the group size (std::invalid_argument names both).
  Tensor loss(const Tensor& idx, const Tensor& targets);
  /// Sequence parallelism only (nothing otherwise): sums the gradients of the replicated
  /// parameters (LayerNorms, wpe, the row-parallel biases) over the group. Call after
  /// backward, before the optimizer step; every rank of the group calls it.
  void all_reduce_replicated_grads();

  const GPTConfig& config() const { return config_; }
  collectives::Communicator& group() { return group_; }

  std::shared_ptr<VocabParallelEmbedding> wte;
  std::shared_ptr<Embedding> wpe;
  std::vector<std::shared_ptr<TensorParallelBlock>> h;
  std::shared_ptr<LayerNorm> ln_f;

 private:
  GPTConfig config_;
  collectives::Communicator& group_;
  bool sequence_parallel_;
};

}  // namespace ringgrad::nn::parallel
