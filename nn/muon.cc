// Muon's update: momentum, the Newton-Schulz iteration in matmuls, and the shape scale.
#include "nn/muon.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tensor/elementwise.h"
#include "tensor/matmul.h"
#include "tensor/reduce.h"
#include "tensor/view.h"

namespace ringgrad::nn {

Tensor newton_schulz(const Tensor& g, int steps) {
  if (g.dim() != 2) throw std::invalid_argument("newton_schulz: a 2-D matrix, got shape " + shape_str(g.shape()));
  constexpr double a = 3.4445, b = -4.7750, c = 2.0315;
  const bool tall = g.size(0) > g.size(1);  // iterate on the wide side: A is the smaller Gram matrix
  Tensor x = kernels::contiguous(tall ? kernels::transpose(g, 0, 1) : g);
  const double norm = std::sqrt(kernels::sum(kernels::mul(x, x)).item<double>());
  x = kernels::mul(x, 1.0 / (norm + 1e-7));
  for (int k = 0; k < steps; ++k) {
    const Tensor gram = kernels::matmul(x, kernels::transpose(x, 0, 1));
    const Tensor poly = kernels::add(kernels::mul(gram, b), kernels::mul(kernels::matmul(gram, gram), c));
    x = kernels::add(kernels::mul(x, a), kernels::matmul(poly, x));
  }
  return tall ? kernels::contiguous(kernels::transpose(x, 0, 1)) : x;
}

Muon::Muon(std::vector<ParamGroup> groups, MuonOptions options) : Optimizer(std::move(groups), options.lr), options_(options) {
  for (const auto& group : groups_) {
    for (const Tensor& p : group.params)
      if (p.dim() != 2)
        throw std::invalid_argument("Muon updates matrices only; a parameter of shape " + shape_str(p.shape()) +
                                    " belongs with AdamW");
    buffers_.emplace_back(group.params.size());
  }
  if (options_.shard_count < 1 || options_.shard_rank < 0 || options_.shard_rank >= options_.shard_count ||
      (options_.shard_count > 1 && !options_.share))
    throw std::invalid_argument("Muon: shard_rank " + std::to_string(options_.shard_rank) + " of shard_count " +
                                std::to_string(options_.shard_count) + " (and a share function when more than 1)");
}

Tensor& Muon::state(std::size_t group, std::size_t index, const std::string& name) {
  if (name != "momentum_buffer") throw std::invalid_argument("Muon has no state '" + name + "'");
  Tensor& slot = buffers_.at(group).at(index);
  const Tensor& p = groups_[group].params[index];
  if (!slot.defined()) slot = Tensor::zeros(p.shape(), p.dtype(), p.device());
  return slot;
}

void Muon::step() {
  ++steps_;
  std::vector<std::pair<Tensor, int>> updated;  // (matrix, the rank that updated it)
  int k = 0;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi, ++k) {
      Tensor p = groups_[gi].params[pi];
      if (!p.grad().defined()) continue;
      const Tensor g = p.grad();
      Tensor& buf = state(gi, pi, "momentum_buffer");
      kernels::mul_(buf, options_.momentum);
      kernels::add_(buf, g);
      const int owner = k % options_.shard_count;
      updated.emplace_back(p, owner);
      if (owner != options_.shard_rank) continue;  // another rank orthogonalises this one
      const Tensor update = options_.nesterov ? kernels::add(g, kernels::mul(buf, options_.momentum)) : buf;
      const double wd = groups_[gi].weight_decay;
      if (wd != 0) kernels::mul_(p, 1.0 - lr_ * wd);
      const Tensor matrix = options_.whole ? options_.whole(p, update) : update;
      const double scale =
          std::sqrt(std::max(1.0, static_cast<double>(matrix.size(0)) / static_cast<double>(matrix.size(1))));
      const Tensor orthogonal = newton_schulz(matrix, options_.ns_steps);
      kernels::add_(p, options_.slice ? options_.slice(p, orthogonal) : orthogonal, -lr_ * scale);
    }
  }
  if (options_.shard_count > 1)
    for (auto& [p, owner] : updated) options_.share(p, owner);
}

}  // namespace ringgrad::nn
