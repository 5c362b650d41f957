// train_gpt's checkpoints: which one --resume continues from, the checks that it fits this run
// (the text's vocabulary, the model's computation flags), the experts' config it brings, loading
// it, and writing --out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "examples/train_gpt/options.h"
#include "examples/train_gpt/run.h"

namespace ringgrad::examples {

/// The checkpoint --resume names: the path itself, or for "auto" the --out checkpoint when one is
/// there (the run was restarted), else "" (a fresh start). Throws std::invalid_argument when a
/// named checkpoint is not there (a usage error, as a mistyped flag is) or "auto" comes without --out.
std::string resume_path(const Paths& paths);

/// The mixture-of-experts fields of `model` (--num_experts, --moe_router_topk,
/// --moe_expert_capacity_factor, --moe_aux_loss_coeff) that `given` says the command line did not
/// set, taken from the config of the checkpoint --resume continues (resume_path), so that a MoE
/// run resumes without its flags repeated; nothing for a fresh start. Throws as resume_path does,
/// and std::runtime_error for an unreadable checkpoint.
void resume_moe_config(nn::GPTConfig& model, const Paths& paths, const std::function<bool(const std::string&)>& given);

/// The training state to start from: iteration 0 with fresh generators, or (`resume` not empty)
/// the checkpoint's model, optimizer, iteration and generators, loaded into this rank's piece of
/// `layout` and the default generator. Throws std::invalid_argument when the checkpoint was trained on another vocabulary
/// or with other computation flags (rotary, QK-norm, the activation), naming the flag to pass.
nn::TrainState start_or_resume(nn::parallel::Accelerator& acc, Layout& layout,
                               const nn::TrainConfig& cfg, const nn::data::CharDataset& ds, const Options& opt,
                               const std::string& resume);

/// Collective: writes --out (nothing without it), the whole training state gathered to rank 0,
/// recording `iter` as the next iteration to run.
void save_checkpoint(Run& run, std::int64_t iter);

}  // namespace ringgrad::examples
