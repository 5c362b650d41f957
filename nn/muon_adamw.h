// Muon beside AdamW, as the speedruns pair them (Jordan et al. 2024): Muon for the hidden
// layers' weight matrices, whose updates it orthogonalises, and AdamW for everything Muon is
// not meant for (the token embedding and the head, which look rows up or score them one by
// one, and the vectors: norms and biases). One optimizer to the strategy that holds it: one
// learning rate, one step count, one set of per-parameter states in checkpoints.
#pragma once

#include <memory>

#include "nn/muon.h"
#include "nn/optim.h"

namespace ringgrad::nn {

class Module;

class MuonWithAdamW : public Optimizer {
 public:
  /// The first `muon_groups` groups go to Muon (2-D parameters only: throws as Muon does), the
  /// rest to AdamW. set_lr(lr) gives AdamW lr and Muon lr * muon.lr / adamw.lr, so one schedule
  /// scales both from their own peaks. Throws std::invalid_argument when muon_groups exceeds the
  /// number of groups.
  MuonWithAdamW(std::vector<ParamGroup> groups, std::size_t muon_groups, MuonOptions muon, AdamOptions adamw);
  void step() override;
  /// Every state name either holds; group_state_names says which a group has.
  std::vector<std::string> state_names() const override;
  std::vector<std::string> group_state_names(std::size_t group) const override;
  Tensor& state(std::size_t group, std::size_t index, const std::string& name) override;

 private:
  std::size_t muon_groups_;
  double muon_lr_ratio_;  // Muon's peak over AdamW's
  std::unique_ptr<Muon> muon_;
  std::unique_ptr<AdamW> adamw_;
};

/// A GPT's (or any model's) parameters split for MuonWithAdamW with muon_groups = 1: group 0 the
/// 2-D weights of the blocks ("h." in their names: attention's and the MLP's matrices) with
/// `weight_decay`; then AdamW's two, the other 2-D parameters (wte, wpe, lm_head) with
/// `weight_decay` and every vector without decay (weight_decay_groups' rule).
std::vector<ParamGroup> muon_adamw_groups(const Module& model, double weight_decay);

}  // namespace ringgrad::nn
