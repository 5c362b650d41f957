// Uneven inputs (PyTorch's Join context manager), for every data-parallel strategy: ranks that
// run out of batches before the others keep answering the others' collectives until every rank
// is done, so nobody waits forever in an all-reduce that one rank will never enter.
//
//   UnevenInputs uneven(*dp);
//   while (uneven.begin_step(have_batch)) {   // a collective: false once no rank has a batch
//     dp->zero_grad();
//     uneven.backward(loss_of(have_batch ? next batch : last batch));
//     uneven.step(max_norm);
//   }
//
// A rank without a batch runs the step on its last batch with the loss multiplied by 0: the
// same collectives in the same order (DDP's buckets, ZeRO's reduce-scatters, FSDP's gathers)
// with a gradient of zeros. The reduced gradient is then rescaled from the world's mean to the
// mean over the ranks that had a batch, so each update is the one a single process would make
// on the batches actually seen in that step. Or, with kThrow, the first step at which some but
// not all ranks have a batch ends with an error on every rank naming the ranks and their batch
// counts (PyTorch's throw_on_early_termination).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/parallel/data_parallel/data_parallel.h"

namespace ringgrad::nn::parallel {

class UnevenInputs {
 public:
  enum class Mode { kShadow, kThrow };
  explicit UnevenInputs(DataParallel& dp, Mode mode = Mode::kShadow) : dp_(dp), mode_(mode) {}

  /// Every rank calls it before each step, saying whether it has a batch. Returns false (on
  /// every rank) when none has, true otherwise. kThrow: throws std::runtime_error on every
  /// rank when some ranks have a batch and others not.
  bool begin_step(bool have_batch);
  /// Backward of this rank's loss, or of a loss that counts for nothing when it has no batch
  /// (any loss of the model: its last batch's), through the strategy.
  void backward(const Tensor& loss);
  /// The strategy's step, the gradient being the mean over the ranks that had a batch.
  double step(double max_grad_norm = 0);

  /// Ranks that had a batch in the current step; batches this rank has trained on.
  int active_ranks() const { return active_; }
  std::int64_t batches_seen() const { return seen_; }

 private:
  DataParallel& dp_;
  Mode mode_;
  bool have_ = true;
  int active_ = 0;
  std::int64_t seen_ = 0;
};

}  // namespace ringgrad::nn::parallel
