// Checkpoints of a grid-trained GPT in train_gpt's format (data_parallel/training_state.h, with
// nn/transformer/checkpoint.h's metadata): the whole model under the GPT's names, each
// parameter's optimizer states as "optimizer.<state>.<name>" (AdamW's moments; under Muon +
// AdamW, Muon's momentum for the blocks' matrices and AdamW's moments for the rest),
// "optimizer.steps", the config, the vocabulary, the iteration and the generators. So a run saved under any dp x pp x cp x tp layout resumes on one
// process or under data parallelism (train_gpt --resume) or on any other layout, and theirs
// resume on a grid.
//
// Saving gathers: the data-parallel strategy completes each stage's tensors on dp rank 0
// (ZeRO's and FSDP's shards all-gathered), each tensor-parallel group of replica 0 all-gathers
// its pieces of every parameter and of its states (re-joining the per-part slices, dropping the
// vocabulary's padding), and every stage's tp rank 0 (data- and context-parallel replica 0)
// sends its whole tensors to rank 0, which writes the file. Loading cuts: every rank reads the
// whole file, keeps its tensor-parallel piece and hands it to the strategy, which keeps its shard.
#pragma once

#include <string>

#include "nn/optim.h"
#include "nn/parallel/grid/grid_training.h"
#include "nn/transformer/checkpoint.h"

namespace ringgrad::nn::parallel {

/// Writes the model and optimizer state `dp` holds (its stage, or its dp shard of the stage) of
/// the whole model `config`, trained on `vocab` (the byte of each id), to `path` on rank 0;
/// returns once the file is complete. Every rank of the grid calls it (`world`: the communicator
/// the grid was split from). Throws std::runtime_error on rank 0 when the file cannot be written.
void save_grid_checkpoint(const std::string& path, DataParallel& dp, GridGroups& groups,
                          collectives::Communicator& world, const GPTConfig& config, const std::string& vocab,
                          const TrainState& state);

/// Loads `path` into this rank's piece of the model and optimizer state in `dp` (made by
/// grid_data_parallel, before any step) and returns the saved state. Throws std::runtime_error
/// for a file that is not a ringgrad GPT checkpoint, std::invalid_argument naming a missing or
/// mis-shaped entry.
TrainState load_grid_checkpoint(const std::string& path, DataParallel& dp, GridGroups& groups);

}  // namespace ringgrad::nn::parallel
