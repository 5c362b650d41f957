// Mixture of experts: the transformer's MLP replaced by E expert MLPs behind a router, each
// token processed by only k of them (Shazeer et al. 2017, "Outrageously Large Neural Networks";
// Lepikhin et al. 2020, GShard; Fedus et al. 2021, Switch Transformer).
//
//   x [N, C] -> router (C -> E, no bias) -> softmax -> probs [N, E]
//   top-k experts per token (ties: the lower expert); gates = the chosen probs, renormalised over
//     the k chosen when k >= 2 (GShard's top-2 and Mixtral: g_i / sum_j g_j), the prob itself for
//     k = 1 (Switch)
//   capacity = ceil(capacity_factor * N * k / E) rows per expert; assignments are admitted in
//     GShard's order, every token's first choice (token order) before any second choice, and
//     those past an expert's capacity are dropped: a token with all its choices dropped adds 0
//     and passes through the residual only
//   y[n] = sum over its kept choices e of gate * expert_e(x[n])
//   in eval mode no token is dropped (capacity N), so that sampling one token at a time and
//     evaluation see every expert's output (DeepSpeed and Switch set a separate eval factor)
//   aux = E * sum_e f_e P_e (Switch's load-balancing loss): f_e the fraction of the N k
//     assignments routed to e (before drops, no gradient), P_e the mean prob of e
//
// Cost: each token runs k expert MLPs (k/1 the dense MLP's flops, plus the router's 2 N C E)
// while the parameters grow E-fold. The routing is a collective-free table computed on the CPU;
// autograd flows through the gates and the rows (the routing choices carry no gradient).
// Capacity and the auxiliary loss are per forward call (GShard's "group"): one process with
// micro-batches routes exactly as the ranks of an expert-parallel group each route their own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nn/transformer/mlp.h"

namespace ringgrad::nn {

/// The routing table of one forward call of N tokens over E experts with top-k.
struct Routing {
  std::int64_t tokens = 0, experts = 0, top_k = 0, capacity = 0;
  std::vector<std::int64_t> choice;            // [N k]: token n's s-th expert at n k + s
  std::vector<std::int64_t> routed;            // [E]: assignments routed to e, before drops
  std::vector<std::int64_t> kept;              // [E]: those admitted (<= capacity)
  std::vector<std::int64_t> order;             // the kept assignments n k + s, expert 0's first, each in admission order
  std::int64_t dropped() const { return tokens * top_k - static_cast<std::int64_t>(order.size()); }
};

/// The routing of probs [N, E] (any float dtype, on the CPU) as described above; capacity_factor
/// 0 sets no capacity (every assignment kept). Throws std::invalid_argument when a positive
/// capacity_factor * N * k / E is below one token, naming them.
Routing route(const Tensor& probs, std::int64_t top_k, double capacity_factor);

/// Where a MoE layer's experts run. `rows` holds counts[e] rows for each expert e = 0..E-1,
/// back to back; `expert(e, x)` runs expert e (held here) on x. Returns the outputs in rows'
/// order. MoE's default runs them all here; nn/parallel/expert_parallel shards them.
class ExpertPlacement {
 public:
  using ExpertFn = std::function<Tensor(std::int64_t expert, const Tensor& x)>;
  virtual ~ExpertPlacement() = default;
  virtual Tensor run(const Tensor& rows, const std::vector<std::int64_t>& counts, const ExpertFn& expert) = 0;
};

/// x: [B, T, C] -> [B, T, C]. Children router (C -> E) and experts.0 ... experts.{E-1} (MLP).
class MoE : public Module {
 public:
  /// Throws std::invalid_argument for top_k outside [1, E] or capacity_factor <= 0.
  explicit MoE(const GPTConfig& config);
  /// Routes x's B T tokens (route()), runs each kept (token, expert) row through its expert
  /// (here or through the placement), and adds each token's outputs times their gates; dropped
  /// assignments add nothing. In eval mode nothing is dropped. Keeps aux_loss() and routing().
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<Linear> router;
  /// Expert e at experts[e - first_expert()]: all E until shard() keeps a range.
  std::vector<std::shared_ptr<MLP>> experts;
  /// E, the layer's experts in all; the first one this module holds (0 unless sharded).
  std::int64_t num_experts() const { return num_experts_; }
  std::int64_t first_expert() const { return first_; }

  /// Keeps experts [first, first + count) (the others are removed with their parameters) and
  /// runs the experts through `placement` from now on.
  void shard(std::int64_t first, std::int64_t count, std::shared_ptr<ExpertPlacement> placement);

  /// The last forward's load-balancing loss E sum_e f_e P_e (a scalar with its graph), without
  /// the coefficient; and its routing table.
  const Tensor& aux_loss() const { return aux_loss_; }
  const Routing& routing() const { return routing_; }

  /// Autograd ops the layer is made of. rows: x [N, C] at int64 index [M] -> [M, C] (gradient
  /// added back). scatter_rows: row i of x [M, C] added into row index[i] of a zero [n, C].
  /// cat_rows: parts [m_i, C] one after the other (no part empty) -> [sum m_i, C].
  static Tensor rows(const Tensor& x, const std::vector<std::int64_t>& index);
  static Tensor scatter_rows(const Tensor& x, const std::vector<std::int64_t>& index, std::int64_t n);
  static Tensor cat_rows(const std::vector<Tensor>& parts);

 private:
  std::int64_t num_experts_, top_k_, first_ = 0;
  double capacity_factor_;
  std::shared_ptr<ExpertPlacement> placement_;
  Tensor aux_loss_;
  Routing routing_;
};

}  // namespace ringgrad::nn
