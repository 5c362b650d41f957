// MuonWithAdamW: two optimizers over one list of groups, each stepping its own part, and the
// group index telling which one holds a parameter's state.
#include "nn/muon_adamw.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "nn/module.h"

namespace ringgrad::nn {

MuonWithAdamW::MuonWithAdamW(std::vector<ParamGroup> groups, std::size_t muon_groups, MuonOptions muon,
                             AdamOptions adamw)
    : Optimizer(std::move(groups), adamw.lr), muon_groups_(muon_groups), muon_lr_ratio_(muon.lr / adamw.lr) {
  if (muon_groups > groups_.size())
    throw std::invalid_argument(fmt::format("MuonWithAdamW: {} Muon groups of {} groups", muon_groups, groups_.size()));
  const auto split = groups_.begin() + static_cast<std::ptrdiff_t>(muon_groups);
  muon_ = std::make_unique<Muon>(std::vector<ParamGroup>(groups_.begin(), split), muon);
  adamw_ = std::make_unique<AdamW>(std::vector<ParamGroup>(split, groups_.end()), adamw);
}

void MuonWithAdamW::step() {
  muon_->set_lr(lr_ * muon_lr_ratio_);
  adamw_->set_lr(lr_);
  adamw_->set_steps(steps_);  // Adam's bias correction counts this optimizer's steps (also after a resume)
  muon_->step();
  adamw_->step();
  ++steps_;
}

std::vector<std::string> MuonWithAdamW::state_names() const {
  std::vector<std::string> names = muon_->state_names();
  for (const std::string& name : adamw_->state_names()) names.push_back(name);
  return names;
}

std::vector<std::string> MuonWithAdamW::group_state_names(std::size_t group) const {
  return group < muon_groups_ ? muon_->state_names() : adamw_->state_names();
}

Tensor& MuonWithAdamW::state(std::size_t group, std::size_t index, const std::string& name) {
  return group < muon_groups_ ? muon_->state(group, index, name) : adamw_->state(group - muon_groups_, index, name);
}

std::vector<ParamGroup> muon_adamw_groups(const Module& model, double weight_decay) {
  ParamGroup hidden{{}, weight_decay}, other_matrices{{}, weight_decay}, vectors{{}, 0.0};
  for (const auto& [name, p] : model.named_parameters()) {
    if (p.dim() < 2)
      vectors.params.push_back(p);
    else
      (name.starts_with("h.") ? hidden : other_matrices).params.push_back(p);
  }
  return {hidden, other_matrices, vectors};
}

}  // namespace ringgrad::nn
