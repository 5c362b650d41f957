// What train_gpt's one training loop asks of a layout of the ranks. The loop (train_gpt.cc) is
// the same for every layout: one process, any data-parallel strategy, any dp x pp x cp x tp
// grid. What differs is behind this interface, one class per layout:
//
//   DataParallelLayout  (data_parallel_layout.cc)  the whole model on every rank, inside the
//                       --strategy; the rows of each step split over the ranks
//   GridLayout          (grid_layout.cc)           this rank's stage of the model, split over its
//                       tp group and its cp group's positions, inside the --strategy over the
//                       dp group (nn/parallel/grid)
//
// Each answers: how one step's forward and backward run (and with --accumulation its micro-
// steps), the loss of a batch for evaluation, the logits sampling draws from, and how the whole
// model is saved to (or cut from) a checkpoint in the one-process format. The strategy around
// this rank's piece (zero_grad, the learning rate, the clipped optimizer step, its statistics)
// is a DataParallel for both.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "examples/train_gpt/options.h"
#include "nn/data/char_dataset.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/transformer/checkpoint.h"

namespace ringgrad::examples {

class Layout {
 public:
  virtual ~Layout() = default;

  /// The data-parallel strategy around this rank's piece of the model, with its optimizer.
  virtual nn::parallel::DataParallel& dp() = 0;
  /// The header's line on how the work is split ("strategy ddp: global batch 12 = ...").
  virtual std::string describe() const = 0;
  /// Collective: one step's forward and backward on the global batch (the same on every rank),
  /// in --accumulation micro-steps, the gradients reduced as the layout needs. Returns this
  /// rank's part of the loss: the mean over the world's ranks is the batch's mean loss.
  virtual double forward_backward(const nn::data::Batch& batch) = 0;
  /// Collective: the mean loss of x/y [B, t] (the same on every rank) in eval mode without a
  /// graph; the same value on every rank.
  virtual double loss(const Tensor& x, const Tensor& y) = 0;
  /// Collective: the logits (float32, on the CPU, V values) of the last position of ids [1, t]
  /// on the one rank that samples; undefined on the others.
  virtual Tensor last_logits(const Tensor& ids) = 0;
  /// Collective: writes the whole model and optimizer state, with `state`, to `path` (one
  /// process's format), written by one rank.
  virtual void save(const std::string& path, const nn::TrainState& state) = 0;
  /// Collective: this rank's part of the checkpoint at `path`; returns its training state.
  virtual nn::TrainState load(const std::string& path) = 0;
  /// The communicators --trace records (empty: the world's).
  virtual std::vector<const collectives::Communicator*> traced() = 0;
  /// The whole model's parameter count (each tensor once).
  virtual std::int64_t parameter_count() const = 0;
};

/// The two layouts over acc's ranks, their model cfg.model drawn from cfg.seed as one process
/// draws it (cfg must outlive them). Throw std::invalid_argument when the batch does not divide
/// over the ranks, naming the numbers.
std::unique_ptr<Layout> make_data_parallel_layout(nn::parallel::Accelerator& acc, const nn::TrainConfig& cfg,
                                                  const Options& opt, const nn::data::CharDataset& ds, Device device);
std::unique_ptr<Layout> make_grid_layout(nn::parallel::Accelerator& acc, const nn::TrainConfig& cfg,
                                         const Options& opt, const nn::data::CharDataset& ds, Device device);

/// The layout opt asks for, on `device`: a grid with --tp, --pp or --cp, else data parallelism.
inline std::unique_ptr<Layout> make_layout(nn::parallel::Accelerator& acc, const nn::TrainConfig& cfg,
                                           const Options& opt, const nn::data::CharDataset& ds, Device device) {
  if (opt.mp.grid()) return make_grid_layout(acc, cfg, opt, ds, device);
  return make_data_parallel_layout(acc, cfg, opt, ds, device);
}

}  // namespace ringgrad::examples
