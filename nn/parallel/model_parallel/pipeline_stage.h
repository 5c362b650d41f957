// One stage of a GPT cut into pipeline stages (GPipe, Huang et al. 2019): stage s of S holds
// blocks [s L/S, (s+1) L/S), the first also the embeddings (wte, and wpe unless the positions
// are rotary), the last also ln_f and the head. A head tied to wte means that with S > 1 the
// first and the last stage each hold a copy of wte and sum their gradients after backward
// (Megatron's embedding group), which keeps the two copies equal; an untied lm_head lives on the
// last stage alone. Given a tensor-parallel group, the stage's blocks, embedding and head are
// split over it as in TensorParallelGPT (pipeline x tensor parallelism). The blocks compute what
// the GPT's do, with its rotary embeddings (under context parallelism each position turned by
// its index in the whole sequence), QK-norm or ReLU^2. Parameter names are the GPT's. Blocks
// with mixture-of-experts layers (whole on every tp rank) add their load-balancing losses
// (aux_loss) into the stage's own backward, as each stage owns its blocks' part of the loss.
//
// With V virtual stages (interleaved 1F1B, Narayanan et al. 2021) the model is cut into S V
// pieces of L/(S V) blocks and stage s holds V of them, round-robin as Megatron-LM assigns them:
// its chunk c is virtual stage c S + s. Stage 0 still holds the embeddings (chunk 0 begins the
// model), stage S-1 ln_f and the head (its chunk V-1 ends it); forward_chunk runs one chunk.
//
//   first:  idx [b, T] int64          -> [b, T, C]
//   middle: [b, T, C]                 -> [b, T, C]
//   last:   [b, T, C] (or idx if S=1) -> logits [b, T, V] (with TP: this rank's [b, T, V'/p])
#pragma once

#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "nn/transformer/gpt.h"

namespace ringgrad::nn::parallel {

class PipelineStage : public Module {
 public:
  /// Copies stage `stage` of `stages` out of `full`, split over `tp` when given (it must
  /// outlive the stage). With a context-parallel group `cp` (tp must be given then, of any
  /// size) the stage runs on this rank's T/c positions of each sequence: positions offset by
  /// its cp rank, attention by ring attention. Throws std::invalid_argument when n_layer does
  /// not divide by stages x virtual_stages, or what TensorParallelGPT throws, naming the numbers.
  PipelineStage(const GPT& full, int stage, int stages, collectives::Communicator* tp = nullptr,
                collectives::Communicator* cp = nullptr, bool sequence_parallel = false, int virtual_stages = 1);
  /// The stage's chunk 0 (its only one unless interleaved); forward_chunk picks another.
  Tensor forward(const Tensor& x) override;
  /// Chunk c's blocks (virtual stage c S + s), with the embeddings first on chunk 0 of stage 0
  /// and ln_f and the head last on chunk V-1 of stage S-1; through the forward hooks, as
  /// operator() runs forward.
  Tensor forward_chunk(int chunk, const Tensor& x);
  /// The last stage's loss: mean cross-entropy of its output against targets [b, T] (with TP
  /// vocabulary-parallel, from this rank's slice of the logits).
  Tensor loss(const Tensor& logits, const Tensor& targets);
  /// The load-balancing loss of chunk c's MoE layers in their last forward, moe_aux_loss_coef
  /// times their sum as GPT::aux_loss gives it for all blocks (a scalar with its graph);
  /// undefined when the chunk has none.
  Tensor aux_loss(int chunk) const;
  /// The token table this stage holds (first stage, and the last when tied), whole or this
  /// rank's rows; undefined elsewhere.
  Tensor& wte_weight() { return wte_weight_; }
  /// Whether the stage's layers are the split ones (a tp group was given).
  bool is_split() const { return tp_ != nullptr; }
  /// Sequence parallelism (with a tp group): between the layers, and between the stages, each
  /// tp rank holds T/p of the positions of its (context-parallel) share of the sequence.
  bool sequence_parallel() const { return sequence_parallel_; }
  /// The positions an activation between stages holds, for input sequences of t positions.
  std::int64_t activation_length(std::int64_t t) const { return sequence_parallel_ ? t / tp_->world_size() : t; }
  /// Sequence parallelism: sums the replicated parameters' gradients over the tp group (each
  /// rank saw T/p of the positions). Call after backward; every rank of the group calls it.
  void sum_sequence_parallel_grads();
  /// Whether the first and the last stage hold copies of wte that must be summed.
  bool tied_copies() const { return config_.tie_weights && stages_ > 1; }

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == stages_ - 1; }
  /// V: the model chunks this stage holds (1 unless interleaved).
  int chunks() const { return chunks_; }
  /// Whether chunk c begins the model (takes token ids) or ends it (gives logits).
  bool is_first_chunk(int chunk) const { return is_first() && chunk == 0; }
  bool is_last_chunk(int chunk) const { return is_last() && chunk == chunks_ - 1; }
  const GPTConfig& config() const { return config_; }

  std::shared_ptr<Module> wte;           // first stage (and last, tied): Embedding, or VocabParallelEmbedding
  std::shared_ptr<Embedding> wpe;        // first stage, unless rotary
  std::vector<std::shared_ptr<Module>> h;  // Block, or TensorParallelBlock
  std::shared_ptr<LayerNorm> ln_f;       // last stage
  std::shared_ptr<Module> lm_head;       // last stage, untied: Linear, or ColumnParallelLinear over the vocabulary

 private:
  GPTConfig config_;
  int stage_, stages_, chunks_;
  int chunk_ = 0;  // the chunk forward() runs: set by forward_chunk for its call
  collectives::Communicator* tp_;
  collectives::Communicator* cp_;
  bool sequence_parallel_;
  Tensor wte_weight_;
};

}  // namespace ringgrad::nn::parallel
