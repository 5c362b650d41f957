// The vocabulary split over a tensor-parallel group (Megatron-LM): the token embedding and the
// output logits each hold V/p of the vocabulary's rows per rank, and the loss is computed
// without ever gathering the full [N, V] logits. Rank q holds token ids [q V/p, (q+1) V/p).
//
// Cross-entropy of row i, with l its logits over the whole vocabulary and t its target:
//   loss_i = log sum_v exp(l_v - m) - (l_t - m),   m = max_v l_v
// Each term is a sum or a max over the vocabulary, so each rank computes its share and one
// all-reduce each makes it whole: the max (MAX), the sum of exponentials (SUM) and the target
// logit (SUM, from the one rank that holds it). The gradient is local:
//   d loss / d l_v = (softmax_v - [v == t]) / N, with softmax_v = exp(l_v - m) / sum.
// Communication: 3 all-reduces of N values, where gathering the logits would move N V.
#pragma once

#include "collectives/communicator.h"
#include "nn/module.h"
#include "tensor/tensor.h"

namespace ringgrad::nn::parallel {

/// mean over i of loss_i for logits [N, V/p] (this rank's vocabulary slice; float32 or
/// float64) and targets [N] (int64 ids in [0, vocab_size)). `vocab_size` below V (0: V) marks
/// the columns from it on as padding (a vocabulary padded to a multiple of p): they take no
/// part in the softmax and get no gradient. Every rank of the group calls it with the same
/// targets. Throws std::out_of_range for a target outside [0, vocab_size), naming it.
Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, collectives::Communicator& group,
                                    std::int64_t vocab_size = 0);

/// `weight` [V, C] with zero rows appended up to a multiple of `multiple` rows.
Tensor pad_vocab(const Tensor& weight, std::int64_t multiple);

/// The token embedding with its rows split: rank q looks up the ids it holds (zeros for the
/// others) and reduce_from_group sums the ranks' rows, so each id's row comes from its owner.
class VocabParallelEmbedding : public Module {
 public:
  /// Keeps this rank's rows of `full_weight` [V, C]. Throws std::invalid_argument when V does
  /// not divide by the group size, naming both.
  VocabParallelEmbedding(const Tensor& full_weight, collectives::Communicator& group);
  /// ids: int64 of any shape, in [0, V) -> [*ids.shape, C], the same on every rank.
  Tensor forward(const Tensor& ids) override;

  Tensor weight;  // [V/p, C]
  /// Sequence parallelism: ids are [B, T] and each rank gets its [B, T/p, C] of the sum.
  bool sequence_parallel = false;

 private:
  collectives::Communicator& group_;
};

}  // namespace ringgrad::nn::parallel
