// train_gpt's optimizer (nanoGPT's configure_optimizers): AdamW on every parameter, or
// (--optimizer muon) Muon on the blocks' matrices and AdamW on the rest, inside the --strategy.
#pragma once

#include <memory>
#include <string>

#include "examples/train_gpt/options.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/transformer/gpt.h"

namespace ringgrad::examples {

/// Wraps `model` (already on its device, so the optimizer's state is made there too) and its
/// optimizer in the data-parallel strategy dist.strategy. Weight decay applies to 2-D parameters only.
std::unique_ptr<nn::parallel::DataParallel> configure_optimizers(nn::parallel::Accelerator& acc,
                                                                 const std::shared_ptr<nn::GPT>& model,
                                                                 const nn::TrainConfig& cfg, const Distributed& dist);

/// "AdamW (lr 0.001)", or Muon's and AdamW's learning rates and how Muon's work is split.
std::string describe_optimizer(const nn::TrainConfig& cfg, const Distributed& dist);

/// The optimizer step: clips the gradients to a global norm of `grad_clip` (0: no clipping) and
/// updates the parameters. Returns the norm before clipping.
double optimizer_step(nn::parallel::DataParallel& dp, double grad_clip);

}  // namespace ringgrad::examples
