// What the pieces around train_gpt's training loop share: the ranks, the config, the data, the
// layout of the model over the ranks and the data-parallel strategy that trains this rank's
// piece, the training state, and the JSON-lines log.
#pragma once

#include <cstdint>
#include <string>

#include "examples/train_gpt/layout.h"
#include "examples/train_gpt/options.h"
#include "examples/train_gpt/run_log.h"
#include "nn/data/char_dataset.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/transformer/checkpoint.h"

namespace ringgrad::examples {

/// Made once in train() after the model and its strategy exist; the helpers around the loop
/// (evaluate, save_checkpoint, log_progress, ...) read it and advance `state` and `log`.
struct Run {
  nn::parallel::Accelerator& acc;
  const nn::TrainConfig& cfg;
  const Options& opt;
  const nn::data::CharDataset& ds;
  Layout& layout;                  // how the model lies on the ranks (layout.h)
  nn::parallel::DataParallel& dp;  // this rank's piece inside the --strategy, with its optimizer: layout.dp()
  Device device;
  std::int64_t first_iter;  // the iteration this process started at (0, or the resumed one)
  nn::TrainState state;     // the next iteration, the batches' generator and dropout's
  RunLog log;
};

}  // namespace ringgrad::examples
