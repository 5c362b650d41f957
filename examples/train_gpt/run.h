// What the pieces around train_gpt's training loop share: the ranks, the config, the data, the
// model and the data-parallel wrapper that trains it, the training state, and the JSON-lines log.
#pragma once

#include <cstdint>
#include <string>

#include "examples/train_gpt/options.h"
#include "examples/train_gpt/run_log.h"
#include "nn/data/char_dataset.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/transformer/checkpoint.h"
#include "nn/transformer/gpt.h"

namespace ringgrad::examples {

/// Made once in train() after the model and its strategy exist; the helpers around the loop
/// (evaluate, save_checkpoint, log_progress, ...) read it and advance `state` and `log`.
struct Run {
  nn::parallel::Accelerator& acc;
  const nn::TrainConfig& cfg;
  const Options& opt;
  const nn::data::CharDataset& ds;
  nn::GPT& model;
  nn::parallel::DataParallel& dp;  // the model inside the --strategy, with its optimizer
  Device device;
  std::int64_t first_iter;  // the iteration this process started at (0, or the resumed one)
  nn::TrainState state;     // the next iteration, the batches' generator and dropout's
  RunLog log;
};

}  // namespace ringgrad::examples
