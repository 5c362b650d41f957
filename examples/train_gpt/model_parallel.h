// train_gpt's model-parallel path (--tp, --pp, --cp): the GPT on a dp x pp x cp x tp grid of the job's
// ranks, trained with grid_step (nn/parallel/grid_training.h), the data-parallel size the rest
// of the world.
#pragma once

#include <string>

#include "nn/transformer/train_config.h"

namespace ringgrad::examples {

struct ModelParallelOptions {
  int tp = 1, pp = 1, cp = 1;
  int micro_batches = 1;         // per data-parallel replica and step
  std::string schedule = "1f1b";  // or afab
};

/// Trains cfg on the text at `data` for cfg.max_iters iterations, printing the grid, then the
/// training loss every log_interval (the batch's loss before the step, as train_gpt's data-
/// parallel path prints it, so the two curves can be laid side by side). Returns the exit code.
int train_model_parallel(nn::TrainConfig cfg, const std::string& data, const ModelParallelOptions& mp);

}  // namespace ringgrad::examples
