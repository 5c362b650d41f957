// train_gpt's optimizer (nanoGPT's configure_optimizers): AdamW on every parameter, or
// (--optimizer muon) Muon on the blocks' matrices and AdamW on the rest, inside the --strategy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "examples/train_gpt/options.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/transformer/gpt.h"

namespace ringgrad::examples {

/// Wraps `model` (already on its device, so the optimizer's state is made there too) and its
/// optimizer in the data-parallel strategy dist.strategy. Weight decay applies to 2-D parameters only.
std::unique_ptr<nn::parallel::DataParallel> configure_optimizers(nn::parallel::Accelerator& acc,
                                                                 const std::shared_ptr<nn::GPT>& model,
                                                                 const nn::TrainConfig& cfg, const Distributed& dist);

/// The parameter groups of cfg's optimizer over `model` (a GPT, or a grid's stage of one):
/// weight decay on 2-D parameters only, and with Muon the blocks' matrices in a group of their own.
std::vector<nn::ParamGroup> optimizer_groups(const nn::TrainConfig& cfg, const nn::Module& model);

/// cfg's optimizer over the groups a strategy on `dp` hands it: AdamW, or Muon + AdamW with
/// Muon's orthogonalisations shared over `dp` (--muon_sharded) and, when `split` (a grid's stage)
/// holds slices of its matrices, each gathered whole over `tp` (tensor_parallel_muon.h).
nn::parallel::OptimizerFactory optimizer_factory(const nn::TrainConfig& cfg, const Distributed& dist,
                                                 collectives::Communicator& dp, const nn::Module* split = nullptr,
                                                 collectives::Communicator* tp = nullptr);

/// "AdamW (lr 0.001)", or Muon's and AdamW's learning rates and how Muon's work is split.
std::string describe_optimizer(const nn::TrainConfig& cfg, const Distributed& dist);

/// The optimizer step: clips the gradients to a global norm of `grad_clip` (0: no clipping) and
/// updates the parameters. Returns the norm before clipping.
double optimizer_step(nn::parallel::DataParallel& dp, double grad_clip);

}  // namespace ringgrad::examples
