// GPT training checkpoints in one .safetensors file: the model's state_dict under its own
// names (loadable by PyTorch as is), AdamW's moments under "optimizer.exp_avg.<name>" and
// "optimizer.exp_avg_sq.<name>", and in the metadata the config, the iteration, the Adam step
// count and both random generators, so a resumed run continues bit for bit; and the character
// vocabulary the ids stand for, so a run is not continued on a text where they mean others.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "nn/optim.h"
#include "nn/transformer/gpt.h"
#include "tensor/random.h"

namespace ringgrad::nn {

/// Where a training run stands between two iterations.
struct TrainState {
  std::int64_t iter = 0;    // the next iteration to run
  Generator data_gen;       // draws the training batches
  Generator dropout_gen;    // draws dropout masks (the default generator)
};

/// Writes model, optimizer and state to `path` (no vocabulary: the ids are the caller's). The
/// optimizer's groups must hold the model's parameters. Throws std::runtime_error naming the path
/// when it cannot be written.
void save_checkpoint(const std::string& path, const GPT& model, const AdamW& optimizer, const TrainState& state);

/// Loads a file written by save_checkpoint into `model` and `optimizer` (in place, on the
/// device the model's parameters are on) and returns the saved state. Throws std::runtime_error for an unreadable or foreign file and
/// std::invalid_argument when the model's names or shapes differ from the checkpoint's.
TrainState load_checkpoint(const std::string& path, GPT& model, AdamW& optimizer);

/// The metadata of a checkpoint (format, config, iteration, Adam's step count, both generators)
/// and `vocab`, the byte of each id (CharTokenizer::chars(); "" for none), under "vocab_hex" as
/// two hex digits per id; for writers that gather the tensors themselves (data- and
/// model-parallel training).
std::map<std::string, std::string> checkpoint_metadata(const GPTConfig& config, const std::string& vocab,
                                                       const TrainState& state, std::int64_t optimizer_steps);
/// The vocabulary (the byte of each id) a checkpoint's metadata records; "" when it records none.
/// Throws std::runtime_error naming `path` when "vocab_hex" is not pairs of hex digits.
std::string checkpoint_vocab(const std::map<std::string, std::string>& metadata, const std::string& path);
/// Refuses to continue the checkpoint at `path` on a text of another vocabulary than `vocab`, where
/// its ids would stand for other characters: throws std::invalid_argument naming the path, both
/// sizes and the characters only one side has. A checkpoint that records no vocabulary passes.
void check_checkpoint_vocab(const std::string& path, const std::string& vocab);
/// The TrainState recorded in a checkpoint's metadata. Throws std::runtime_error naming `path`
/// for a file that is not a ringgrad GPT checkpoint.
TrainState checkpoint_state(const std::map<std::string, std::string>& metadata, const std::string& path);

/// The config stored in a checkpoint's metadata, to rebuild the model before loading.
GPTConfig checkpoint_config(const std::string& path);

}  // namespace ringgrad::nn
