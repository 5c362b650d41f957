// TensorParallelGPT: the GPT's modules cut for a tensor-parallel group (column / row / vocabulary
// parallel, the rest copied), and its forward, which is GPT::forward with the conjugate ops in.
#include "nn/parallel/model_parallel/tensor_parallel_gpt.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autograd/checkpoint.h"
#include "autograd/linear.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "nn/parallel/model_parallel/grad_reduce.h"
#include "nn/parallel/model_parallel/ring_attention.h"
#include "nn/parallel/model_parallel/tensor_parallel_ops.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/random.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

// A replicated copy of a LayerNorm or an Embedding, with the same values.
std::shared_ptr<LayerNorm> copy_of(const LayerNorm& full, const GPTConfig& config) {
  auto ln = std::make_shared<LayerNorm>(full.weight.size(0), full.bias.defined(), 1e-5, config.dtype);
  kernels::copy_(ln->weight, full.weight);
  if (full.bias.defined()) kernels::copy_(ln->bias, full.bias);
  return ln;
}

std::shared_ptr<Embedding> copy_of(const Embedding& full, const GPTConfig& config) {
  auto e = std::make_shared<Embedding>(full.weight.size(0), full.weight.size(1), config.dtype);
  kernels::copy_(e->weight, full.weight);
  return e;
}

// A replicated copy of a MoE layer (router and every expert). Making it draws weights; the
// generator is put back, so the copy does not change what the program draws next.
std::shared_ptr<MoE> copy_of(const MoE& full, const GPTConfig& config) {
  const Generator saved = default_generator();
  auto moe = std::make_shared<MoE>(config);
  default_generator() = saved;
  moe->load_state_dict(full.state_dict());
  return moe;
}

}  // namespace

std::vector<Tensor> replicated_parameters(const Module& model) {
  std::vector<Tensor> out;
  for (auto& [name, p] : model.named_parameters())
    if (shard_spec(name).dim < 0) out.push_back(p);
  return out;
}

void TensorParallelBlock::set_sequence_parallel(bool on) {
  if (on && moe)
    throw std::invalid_argument("TensorParallelBlock: sequence parallelism with mixture-of-experts layers is not "
                                "supported (each tp rank would route T/p of the positions, with another capacity)");
  attn->c_attn->sequence_parallel = attn->c_proj->sequence_parallel = on;
  if (moe) return;
  mlp->c_fc->sequence_parallel = mlp->c_proj->sequence_parallel = on;
}

ShardSpec shard_spec(std::string_view name) {
  if (name.find("mlp.router.") != std::string_view::npos || name.find("mlp.experts.") != std::string_view::npos)
    return {};  // a MoE's router and experts: whole on every tp rank
  if (name == "wte.weight" || name == "lm_head.weight") return {0, 1, true};
  if (name.ends_with("attn.c_attn.weight") || name.ends_with("attn.c_attn.bias")) return {0, 3, false};
  if (name.ends_with("mlp.c_fc.weight") || name.ends_with("mlp.c_fc.bias")) return {0, 1, false};
  if (name.ends_with("c_proj.weight")) return {1, 1, false};
  return {};  // LayerNorms, wpe, the row-parallel biases
}

Tensor shard_of(const Tensor& whole, const ShardSpec& spec, int rank, int p) {
  if (spec.dim < 0) return whole.detach();
  return shard_along(spec.padded ? pad_vocab(whole, p) : whole.detach(), spec.dim, rank, p, spec.parts);
}

Tensor gather_shards(const Tensor& piece, const ShardSpec& spec, collectives::Communicator& group) {
  const Tensor mine = kernels::contiguous(piece.detach());
  const std::int64_t p = group.world_size();
  if (spec.dim < 0 || p == 1) return kernels::clone(mine);
  Shape all_shape = mine.shape();
  all_shape.insert(all_shape.begin(), p);
  Tensor pieces = Tensor::empty(all_shape, mine.dtype(), mine.device());
  group.all_gather(synced_buffer(mine), synced_buffer(pieces));
  // Piece q holds slice q of each part, back to back along spec.dim.
  Shape shape = mine.shape();
  const std::int64_t n = mine.size(spec.dim) / spec.parts;
  shape[static_cast<std::size_t>(spec.dim)] = mine.size(spec.dim) * p;
  Tensor whole = Tensor::empty(shape, mine.dtype(), mine.device());
  for (std::int64_t q = 0; q < p; ++q)
    for (int i = 0; i < spec.parts; ++i)
      kernels::copy_(kernels::narrow(whole, spec.dim, (i * p + q) * n, n),
                     kernels::narrow(kernels::squeeze(kernels::narrow(pieces, 0, q, 1), 0), spec.dim, i * n, n));
  return whole;
}

TensorParallelAttention::TensorParallelAttention(const CausalSelfAttention& full, const GPTConfig& config,
                                                 collectives::Communicator& group, collectives::Communicator* context)
    : heads_here_(config.n_head / group.world_size()),
      dropout_(config.dropout),
      rotary_(config.rotary),
      qk_norm_(config.qk_norm),
      context_(context != nullptr && context->world_size() > 1 ? context : nullptr),
      recompute_(config.recompute == Recompute::Attention) {
  c_attn = register_module("c_attn", std::make_shared<ColumnParallelLinear>(*full.c_attn, group, false, /*parts=*/3));
  c_proj = register_module("c_proj", std::make_shared<RowParallelLinear>(*full.c_proj, group));
}

Tensor TensorParallelAttention::attention_core(const Tensor& qkv) {
  return context_ != nullptr ? ring_attention(qkv, heads_here_, *context_) : causal_self_attention(qkv, heads_here_);
}

Tensor TensorParallelAttention::forward(const Tensor& x) {
  // This rank's q, k and v of its H/p heads: QK-norm and rotary act per head, as on one process.
  Tensor qkv = (*c_attn)(x);  // [B, T, 3C/p]: under context parallelism positions [r T, (r+1) T)
  if (qk_norm_) qkv = qk_norm(qkv, heads_here_);
  if (rotary_) qkv = rotary_qk(qkv, heads_here_, context_ != nullptr ? context_->rank() * qkv.size(1) : 0);
  const Tensor y = recompute_ ? checkpoint([this](const std::vector<Tensor>& in) { return attention_core(in[0]); }, {qkv})
                              : attention_core(qkv);
  return dropout((*c_proj)(y), dropout_, is_training());
}

TensorParallelMLP::TensorParallelMLP(const MLP& full, const GPTConfig& config, collectives::Communicator& group)
    : dropout_(config.dropout), relu_squared_(config.relu_squared) {
  c_fc = register_module("c_fc", std::make_shared<ColumnParallelLinear>(*full.c_fc, group));
  c_proj = register_module("c_proj", std::make_shared<RowParallelLinear>(*full.c_proj, group));
}

Tensor TensorParallelMLP::forward(const Tensor& x) {
  return dropout((*c_proj)(MLP::activation((*c_fc)(x), relu_squared_)), dropout_, is_training());
}

TensorParallelBlock::TensorParallelBlock(const Block& full, const GPTConfig& config, collectives::Communicator& group,
                                         collectives::Communicator* context)
    : recompute_(config.recompute == Recompute::Blocks) {
  ln_1 = register_module("ln_1", copy_of(*full.ln_1, config));
  attn = register_module("attn", std::make_shared<TensorParallelAttention>(*full.attn, config, group, context));
  ln_2 = register_module("ln_2", copy_of(*full.ln_2, config));
  if (full.moe) {
    if (context != nullptr && context->world_size() > 1)
      throw std::invalid_argument(fmt::format("TensorParallelBlock on rank {}: context parallelism with mixture-of-"
                                              "experts layers is not supported (a cp rank's positions are not a whole "
                                              "forward call's tokens: capacity and the load-balancing loss would "
                                              "differ)", group.rank()));
    moe = register_module("mlp", copy_of(*full.moe, config));
  } else {
    mlp = register_module("mlp", std::make_shared<TensorParallelMLP>(*full.mlp, config, group));
  }
}

Tensor TensorParallelBlock::forward(const Tensor& x) {
  if (!recompute_) return residual_branches(x);
  return checkpoint([this](const std::vector<Tensor>& in) { return residual_branches(in[0]); }, {x});
}

Tensor TensorParallelBlock::residual_branches(const Tensor& x) {
  const Tensor h = x + (*attn)((*ln_1)(x));
  const Tensor x2 = (*ln_2)(h);
  return h + (moe ? (*moe)(x2) : (*mlp)(x2));
}

TensorParallelGPT::TensorParallelGPT(const GPT& full, collectives::Communicator& group, bool sequence_parallel)
    : config_(full.config()), group_(group), sequence_parallel_(sequence_parallel) {
  const std::int64_t p = group.world_size();
  if (config_.n_head % p != 0)
    throw std::invalid_argument(fmt::format("TensorParallelGPT on rank {}: n_head {} does not divide into {} "
                                            "tensor-parallel ranks", group.rank(), config_.n_head, p));
  if (!config_.tie_weights) throw std::invalid_argument("TensorParallelGPT: needs tie_weights (lm_head is wte)");
  wte = register_module("wte", std::make_shared<VocabParallelEmbedding>(pad_vocab(full.wte->weight, p), group));
  if (full.wpe) wpe = register_module("wpe", copy_of(*full.wpe, config_));  // none with rotary embeddings
  for (std::size_t i = 0; i < full.h.size(); ++i)
    h.push_back(register_module("h." + std::to_string(i), std::make_shared<TensorParallelBlock>(*full.h[i], config_, group)));
  ln_f = register_module("ln_f", copy_of(*full.ln_f, config_));
  wte->sequence_parallel = sequence_parallel;
  for (auto& block : h) block->set_sequence_parallel(sequence_parallel);
}

void TensorParallelGPT::all_reduce_replicated_grads() {
  if (!sequence_parallel_ || group_.world_size() == 1) return;
  all_reduce_grads(replicated_parameters(*this), group_, collectives::ReduceOp::SUM);
}

Tensor TensorParallelGPT::forward(const Tensor& idx) {
  if (idx.dim() != 2 || idx.size(1) > config_.block_size)
    throw std::invalid_argument(fmt::format("TensorParallelGPT: need token ids [B, T] with T <= block_size {}, got {}",
                                            config_.block_size, shape_str(idx.shape())));
  const std::int64_t t = idx.size(1), p = group_.world_size();
  if (sequence_parallel_ && t % p != 0)
    throw std::invalid_argument(fmt::format("TensorParallelGPT on rank {}: sequence parallelism needs T ({}) to divide "
                                            "into {} ranks", group_.rank(), t, p));
  // Sequence parallel: this rank's positions [r T/p, (r+1) T/p) only.
  const std::int64_t first = sequence_parallel_ ? group_.rank() * (t / p) : 0, len = sequence_parallel_ ? t / p : t;
  const Tensor pos = kernels::narrow(Tensor::arange(t), 0, first, len).to(idx.device());
  Tensor x = (*wte)(idx);  // [B, len, C]
  if (wpe) x = x + (*wpe)(kernels::contiguous(pos));
  x = dropout(x, config_.dropout, is_training());
  for (auto& block : h) x = (*block)(x);
  x = (*ln_f)(x);
  // The tied head is column-parallel over the vocabulary: the whole x in (gathered along T under
  // sequence parallelism), this rank's columns out.
  return linear(sequence_parallel_ ? gather_sequence(x, group_) : copy_to_group(x, group_), wte->weight);  // [B, T, V'/p]
}

Tensor TensorParallelGPT::loss(const Tensor& idx, const Tensor& targets) {
  const Tensor logits = forward(idx);
  const std::int64_t rows = logits.size(0) * logits.size(1);
  return vocab_parallel_cross_entropy(reshape(logits, {rows, logits.size(2)}), reshape(targets, {rows}), group_,
                                      config_.vocab_size);
}

}  // namespace ringgrad::nn::parallel
