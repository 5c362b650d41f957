// Checkpoints of a grid-trained GPT in the one-process format (nn/transformer/checkpoint.h):
// the whole model under the GPT's names, AdamW's moments, the iteration and the generators. So a
// run saved under any dp x pp x cp x tp layout resumes on one process (train_gpt --resume) or on
// any other layout, and a one-process checkpoint resumes on a grid.
//
// Saving gathers: each tensor-parallel group all-gathers its pieces of every parameter and of
// its moments (re-joining the per-part slices, dropping the vocabulary's padding), and every
// stage's tp rank 0 (data- and context-parallel replica 0) sends its whole tensors to rank 0,
// which writes the file. Loading cuts: every rank reads the whole file and keeps its piece.
#pragma once

#include <string>

#include "nn/optim.h"
#include "nn/parallel/grid_training.h"
#include "nn/transformer/checkpoint.h"

namespace ringgrad::nn::parallel {

/// Writes `stage` (this rank's piece) and `optimizer` (over the stage's parameters, made with
/// weight_decay_groups) of the whole model `config` to `path` on rank 0. Every rank of the
/// grid calls it. Throws std::runtime_error on rank 0 when the file cannot be written.
void save_grid_checkpoint(const std::string& path, PipelineStage& stage, AdamW& optimizer, GridGroups& groups,
                          const GPTConfig& config, const TrainState& state, double weight_decay, const AdamOptions& adam);

/// Loads `path` (written by either save function) into this rank's `stage` and `optimizer`
/// (made as above, before any step) and returns the saved state. Throws what load_checkpoint
/// throws (a foreign file, a different model), naming the path.
TrainState load_grid_checkpoint(const std::string& path, PipelineStage& stage, AdamW& optimizer, GridGroups& groups,
                                double weight_decay, const AdamOptions& adam);

}  // namespace ringgrad::nn::parallel
