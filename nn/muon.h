// Muon (Jordan et al. 2024, "Muon: An optimizer for hidden layers in neural networks"): SGD
// momentum for 2-D weights whose every update is first orthogonalised, its singular values
// pushed towards 1, so that no direction of the matrix dominates the step. The orthogonaliser
// is a Newton-Schulz iteration (five steps of a quintic whose coefficients trade exactness for
// speed: the singular values land in roughly [0.7, 1.2], not at 1), all matmuls, no SVD.
//
//   buf = mu buf + g;  u = g + mu buf (Nesterov) or buf;  p -= lr wd p;
//   p -= lr sqrt(max(1, rows / cols)) newton_schulz(u)
//
// For matrices only (the speedrun pairs it with AdamW for embeddings, norms and biases); it
// needs each whole gradient matrix, so it runs where the full gradient is (one process, DDP),
// not on ZeRO's flat shards. Under DDP the orthogonalisations can be split over the ranks
// (MuonOptions::shard_count, nn/parallel/data_parallel/sharded_muon.h); under tensor
// parallelism each update is gathered whole first (MuonOptions::whole,
// nn/parallel/model_parallel/tensor_parallel_muon.h).
#pragma once

#include <functional>

#include "nn/optim.h"

namespace ringgrad::nn {

/// The quintic Newton-Schulz orthogonalisation of a 2-D float tensor [r, c]: `steps` times
/// X <- a X + (b A + c A^2) X with A = X X^T, from X = G / (||G||_F + 1e-7) (on the wide orientation),
/// (a, b, c) = (3.4445, -4.7750, 2.0315). Throws std::invalid_argument for other ranks.
Tensor newton_schulz(const Tensor& g, int steps = 5);

struct MuonOptions {
  double lr = 0.02;
  double momentum = 0.95;
  bool nesterov = true;
  int ns_steps = 5;
  // Under data parallelism every rank holds the same averaged gradients, so the orthogonalisation
  // (the costly part) can be split: matrix k (counted over the groups) is updated by rank
  // k % shard_count only, and then `share(p, owner)` makes every rank's copy the owner's (a
  // broadcast; nn/parallel/data_parallel/sharded_muon.h). Every rank still keeps every momentum
  // buffer, so the result and the state are those of one process. shard_count 1: no sharing.
  int shard_rank = 0, shard_count = 1;
  std::function<void(Tensor& param, int owner)> share = nullptr;
  // Under tensor parallelism a rank holds a slice of some matrices, but Newton-Schulz (and the
  // shape scale) needs the whole one: whole(p, u) returns the whole update of which u is p's
  // slice, slice(p, o) p's slice of the orthogonalised whole (tensor_parallel_muon.h). Unset:
  // every matrix is whole here.
  std::function<Tensor(const Tensor& param, const Tensor& update)> whole = nullptr;
  std::function<Tensor(const Tensor& param, const Tensor& orthogonal)> slice = nullptr;
};

class Muon : public Optimizer {
 public:
  /// Throws std::invalid_argument when a parameter is not 2-D, naming its shape, or when
  /// shard_count > 1 comes without `share` or shard_rank is outside [0, shard_count).
  Muon(std::vector<ParamGroup> groups, MuonOptions options = {});
  void step() override;
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
  Tensor& state(std::size_t group, std::size_t index, const std::string& name) override;

 private:
  MuonOptions options_;
  std::vector<std::vector<Tensor>> buffers_;  // [group][param]
};

}  // namespace ringgrad::nn
