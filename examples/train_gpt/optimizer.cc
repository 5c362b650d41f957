// AdamW or Muon + AdamW for train_gpt, made inside the data-parallel strategy so that sharded
// strategies (ZeRO, FSDP) hold each rank's share of the optimizer state.
#include "examples/train_gpt/optimizer.h"

#include <fmt/format.h>

#include "trace/trace.h"
#include "nn/muon_adamw.h"
#include "nn/parallel/data_parallel/sharded_muon.h"
#include "nn/parallel/model_parallel/tensor_parallel_muon.h"
#include "nn/parallel/expert_parallel/expert_data_parallel.h"
#include "nn/transformer/train_step.h"

namespace ringgrad::examples {

std::vector<nn::ParamGroup> optimizer_groups(const nn::TrainConfig& cfg, const nn::Module& model) {
  return cfg.optimizer == "muon" ? nn::muon_adamw_groups(model, cfg.weight_decay)
                                 : nn::weight_decay_groups(model, cfg.weight_decay);
}

nn::parallel::OptimizerFactory optimizer_factory(const nn::TrainConfig& cfg, const Distributed& dist,
                                                 collectives::Communicator& dp, const nn::Module* split,
                                                 collectives::Communicator* tp) {
  return [&cfg, &dist, &dp, split, tp](std::vector<nn::ParamGroup> groups) -> std::unique_ptr<nn::Optimizer> {
    const nn::AdamOptions adam{cfg.lr, cfg.beta1, cfg.beta2, 1e-8};
    if (cfg.optimizer != "muon") return std::make_unique<nn::AdamW>(std::move(groups), adam);
    // Every rank orthogonalises its share of the matrices and broadcasts them (sharded_muon.h),
    // or (--muon_sharded false) every rank orthogonalises every matrix: the same updates, slower.
    nn::MuonOptions muon{cfg.muon_lr, cfg.muon_momentum};
    if (dist.muon_sharded) muon = nn::parallel::shard_over(muon, dp);
    if (split != nullptr && tp != nullptr) muon = nn::parallel::split_over(muon, *split, *tp);
    return std::make_unique<nn::MuonWithAdamW>(std::move(groups), 1, muon, adam);
  };
}

std::unique_ptr<nn::parallel::DataParallel> configure_optimizers(nn::parallel::Accelerator& acc,
                                                                 const std::shared_ptr<nn::GPT>& model,
                                                                 const nn::TrainConfig& cfg, const Distributed& dist) {
  if (dist.ep > 1)  // the experts sharded over groups of ep ranks, with their own reduction
    return std::make_unique<nn::parallel::ExpertDataParallel>(model, acc.comm(), dist.ep, cfg.weight_decay,
                                                              optimizer_factory(cfg, dist, acc.comm()));
  nn::parallel::DataParallelOptions options;
  options.bucket_cap_mb = dist.bucket_cap_mb;
  options.overlap = dist.overlap;
  options.fsdp_units.assign(model->h.begin(), model->h.end());  // FSDP gathers one block at a time
  return acc.prepare(dist.strategy, model, optimizer_groups(cfg, *model), optimizer_factory(cfg, dist, acc.comm()),
                     options);
}

std::string describe_optimizer(const nn::TrainConfig& cfg, const Distributed& dist) {
  if (cfg.optimizer != "muon") return fmt::format("AdamW (lr {})", cfg.lr);
  return fmt::format("Muon (lr {}, {}) on the blocks' matrices, AdamW (lr {}) on the rest", cfg.muon_lr,
                     dist.muon_sharded ? "sharded over the ranks" : "every rank orthogonalising every matrix", cfg.lr);
}

double optimizer_step(nn::parallel::DataParallel& dp, double grad_clip) {
  const trace::Span span("optimizer step", "step");
  return dp.step(grad_clip);
}

}  // namespace ringgrad::examples
