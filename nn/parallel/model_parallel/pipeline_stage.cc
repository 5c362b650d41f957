// PipelineStage: the GPT's modules of one stage under their own names (copied, or cut for a
// tensor-parallel group), and the part of GPT::forward that runs there.
#include "nn/parallel/model_parallel/pipeline_stage.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autograd/linear.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "nn/parallel/model_parallel/grad_reduce.h"
#include "nn/parallel/model_parallel/tensor_parallel_gpt.h"
#include "nn/parallel/model_parallel/tensor_parallel_linear.h"
#include "nn/parallel/model_parallel/tensor_parallel_ops.h"
#include "nn/parallel/model_parallel/vocab_parallel.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

PipelineStage::PipelineStage(const GPT& full, int stage, int stages, collectives::Communicator* tp,
                             collectives::Communicator* cp, bool sequence_parallel, int virtual_stages)
    : config_(full.config()), stage_(stage), stages_(stages), chunks_(virtual_stages), tp_(tp), cp_(cp),
      sequence_parallel_(sequence_parallel && tp != nullptr && tp->world_size() > 1) {
  const std::int64_t layers = config_.n_layer;
  if (stages < 1 || stage < 0 || stage >= stages || virtual_stages < 1 || layers % (stages * virtual_stages) != 0)
    throw std::invalid_argument(
        virtual_stages == 1
            ? fmt::format("PipelineStage {} of {}: n_layer {} does not divide into {} stages", stage, stages, layers, stages)
            : fmt::format("PipelineStage {} of {}: n_layer {} does not divide into {} stages x {} virtual stages = {} "
                          "model chunks", stage, stages, layers, stages, virtual_stages, stages * virtual_stages));
  if (tp != nullptr && config_.n_head % tp->world_size() != 0)
    throw std::invalid_argument(fmt::format("PipelineStage on rank {}: n_head {} does not divide into {} tensor-parallel "
                                            "ranks", tp->rank(), config_.n_head, tp->world_size()));
  const GPTConfig& c = config_;
  const std::int64_t per = layers / (stages * virtual_stages);  // blocks per chunk
  if (is_first() || (is_last() && c.tie_weights)) {
    if (tp != nullptr) {
      auto e = std::make_shared<VocabParallelEmbedding>(pad_vocab(full.wte->weight, tp->world_size()), *tp);
      wte_weight_ = e->weight;
      wte = register_module("wte", e);
    } else {
      auto e = std::make_shared<Embedding>(full.wte->weight.size(0), c.n_embd, c.dtype);
      kernels::copy_(e->weight, full.wte->weight);
      wte_weight_ = e->weight;
      wte = register_module("wte", e);
    }
  }
  // Plain modules are new ones of the same shapes given the whole model's values. Making them
  // draws initial weights; the generator is put back, so a stage does not change what the
  // program draws next.
  const Generator saved = default_generator();
  if (is_first() && full.wpe) wpe = register_module("wpe", std::make_shared<Embedding>(c.block_size, c.n_embd, c.dtype));
  for (std::int64_t chunk = 0; chunk < virtual_stages; ++chunk) {
    const std::int64_t first = (chunk * stages + stage) * per;  // virtual stage chunk S + s
    for (std::int64_t i = first; i < first + per; ++i) {
      const Block& block = *full.h[static_cast<std::size_t>(i)];
      std::shared_ptr<Module> mine;
      if (tp != nullptr) mine = std::make_shared<TensorParallelBlock>(block, c, *tp, cp);
      else mine = std::make_shared<Block>(c);
      h.push_back(register_module("h." + std::to_string(i), mine));
    }
  }
  if (is_last()) ln_f = register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd, c.bias, 1e-5, c.dtype));
  if (is_last() && !c.tie_weights) {
    if (tp != nullptr) {
      // Vocabulary-parallel: this rank's rows of the head, padded as wte is.
      const Tensor padded = pad_vocab(full.lm_head->weight, tp->world_size());
      Linear whole_head(c.n_embd, padded.size(0), false, c.dtype);
      kernels::copy_(whole_head.weight, padded);
      lm_head = register_module("lm_head", std::make_shared<ColumnParallelLinear>(whole_head, *tp));
    } else {
      lm_head = register_module("lm_head", std::make_shared<Linear>(c.n_embd, c.vocab_size, false, c.dtype));
    }
  }
  default_generator() = saved;
  StateDict whole;
  for (auto& [name, t] : full.named_parameters()) whole[name] = t.detach();
  StateDict plain;  // the copied modules' values; the split ones were cut from `full` already
  for (auto& [name, t] : named_parameters())
    if (tp == nullptr || shard_spec(name).dim < 0) plain[name] = whole.at(name);
  load_state_dict(plain, /*strict=*/false);
  if (!sequence_parallel_) return;
  if (auto e = std::dynamic_pointer_cast<VocabParallelEmbedding>(wte)) e->sequence_parallel = true;
  if (auto head = std::dynamic_pointer_cast<ColumnParallelLinear>(lm_head)) head->sequence_parallel = true;
  for (auto& m : h) dynamic_cast<TensorParallelBlock&>(*m).set_sequence_parallel(true);
}

void PipelineStage::sum_sequence_parallel_grads() {
  if (sequence_parallel_) all_reduce_grads(replicated_parameters(*this), *tp_, collectives::ReduceOp::SUM);
}

Tensor PipelineStage::forward_chunk(int chunk, const Tensor& input) {
  if (chunk < 0 || chunk >= chunks_)
    throw std::invalid_argument(fmt::format("PipelineStage {}: chunk {} of {}", stage_, chunk, chunks_));
  chunk_ = chunk;
  Tensor y = (*this)(input);  // through the stage's forward hooks (a sharded strategy gathers there)
  chunk_ = 0;
  return y;
}

Tensor PipelineStage::forward(const Tensor& input) {
  const int chunk = chunk_;
  Tensor x = input;
  if (is_first_chunk(chunk)) {
    // Under context parallelism this rank holds positions [r t, (r+1) t) of the sequence; under
    // sequence parallelism, tp rank q the q-th T/p of those after the embedding.
    const std::int64_t t = input.size(1), len = activation_length(t);
    if (sequence_parallel_ && t % tp_->world_size() != 0)
      throw std::invalid_argument(fmt::format("PipelineStage on {}: sequence parallelism needs the {} positions to divide "
                                              "into {} tensor-parallel ranks", collectives::describe_rank(tp_->group()),
                                              t, tp_->world_size()));
    const std::int64_t first = (cp_ != nullptr ? cp_->rank() * t : 0) + (sequence_parallel_ ? tp_->rank() * len : 0);
    const Tensor pos = kernels::contiguous(kernels::narrow(Tensor::arange(first + len), 0, first, len)).to(input.device());
    x = (*wte)(input);
    if (wpe) x = x + (*wpe)(pos);  // none with rotary embeddings: the positions turn q and k instead
    x = dropout(x, config_.dropout, is_training());
  }
  const std::size_t per = h.size() / static_cast<std::size_t>(chunks_), c = static_cast<std::size_t>(chunk);
  for (std::size_t i = c * per; i < (c + 1) * per; ++i) x = (*h[i])(x);
  if (!is_last_chunk(chunk)) return x;
  x = (*ln_f)(x);
  if (lm_head) return (*lm_head)(x);  // untied; column-parallel over the vocabulary under TP
  if (tp_ == nullptr) return linear(x, wte_weight_);  // [b, T, V]
  return linear(sequence_parallel_ ? gather_sequence(x, *tp_) : copy_to_group(x, *tp_), wte_weight_);  // [b, T, V'/p]
}

Tensor PipelineStage::aux_loss(int chunk) const {
  const std::size_t per = h.size() / static_cast<std::size_t>(chunks_), c = static_cast<std::size_t>(chunk);
  Tensor total;
  for (std::size_t i = c * per; i < (c + 1) * per; ++i) {
    const auto* plain = dynamic_cast<const Block*>(h[i].get());
    const auto* split = dynamic_cast<const TensorParallelBlock*>(h[i].get());
    const MoE* moe = plain != nullptr ? plain->moe.get() : split->moe.get();
    if (moe == nullptr) continue;
    const Tensor a = moe->aux_loss() * config_.moe_aux_loss_coef;
    total = total.defined() ? total + a : a;
  }
  return total;
}

Tensor PipelineStage::loss(const Tensor& logits, const Tensor& targets) {
  const std::int64_t rows = logits.size(0) * logits.size(1);
  const Tensor l = reshape(logits, {rows, logits.size(2)}), y = reshape(targets, {rows});
  return tp_ != nullptr ? vocab_parallel_cross_entropy(l, y, *tp_, config_.vocab_size) : cross_entropy(l, y);
}

}  // namespace ringgrad::nn::parallel
