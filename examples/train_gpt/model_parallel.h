// train_gpt's model-parallel path (--tp, --pp, --cp): the GPT on a dp x pp x cp x tp grid of the
// job's ranks, trained with grid_step (nn/parallel/grid/grid_training.h), the data-parallel size the
// rest of the world and --strategy the data-parallel strategy inside its groups. Checkpoints are the one-process format (nn/parallel/grid/grid_checkpoint.h).
#pragma once

#include <string>

#include "nn/parallel/data_parallel/make_data_parallel.h"
#include "nn/transformer/train_config.h"

namespace ringgrad::examples {

struct ModelParallelOptions {
  int tp = 1, pp = 1, cp = 1;
  bool sp = false;  // sequence parallelism inside the tp groups
  std::string strategy = "ddp";  // the data-parallel strategy inside the dp groups (make_data_parallel's names)
  nn::parallel::DataParallelOptions dp_options;  // its knobs (bucket size, overlap)
  int micro_batches = 1;         // per data-parallel replica and step
  std::string schedule = "1f1b";  // or afab
  std::string log, out, resume;  // JSON lines; checkpoint written at the end; checkpoint to continue
  std::int64_t save_every = 0;    // also write `out` every this many iterations
  std::string trace;              // a timeline (nn/parallel/timeline.h) of trace_iters iterations from 2
  std::int64_t trace_iters = 3;
};

/// Trains cfg on the text at `data` up to cfg.max_iters iterations, printing the grid, then the
/// training loss every log_interval (the batch's loss before the step, as train_gpt's data-
/// parallel path prints it, so the two curves can be laid side by side), and one step's
/// communication per group. Returns the exit code.
int train_model_parallel(nn::TrainConfig cfg, const std::string& data, const ModelParallelOptions& mp);

}  // namespace ringgrad::examples
