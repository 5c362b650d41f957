// MoE: routing table, gates, the experts run over their rows (here or through a placement), the
// outputs weighted by the gates and added back at their tokens, and the load-balancing loss.
#include "nn/transformer/moe.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "tensor/index.h"
#include "tensor/view.h"

namespace ringgrad::nn {
namespace {

namespace k = kernels;

Tensor index_tensor(const std::vector<std::int64_t>& index, Device device) {
  return Tensor::from_vector(index, {static_cast<std::int64_t>(index.size())}).to(device);
}

// The default placement: every expert on this process, one after the other.
class LocalExperts final : public ExpertPlacement {
 public:
  Tensor run(const Tensor& rows, const std::vector<std::int64_t>& counts, const ExpertFn& expert) override {
    std::vector<Tensor> parts;
    std::int64_t offset = 0;
    for (std::size_t e = 0; e < counts.size(); ++e) {
      if (counts[e] > 0) parts.push_back(expert(static_cast<std::int64_t>(e), narrow(rows, 0, offset, counts[e])));
      offset += counts[e];
    }
    return parts.empty() ? rows * 0.0 : MoE::cat_rows(parts);
  }
};

}  // namespace

Routing route(const Tensor& probs, std::int64_t top_k, double capacity_factor) {
  Routing r;
  r.tokens = probs.size(0);
  r.experts = probs.size(1);
  r.top_k = top_k;
  const double exact = capacity_factor == 0 ? static_cast<double>(r.tokens)
                                            : capacity_factor * static_cast<double>(r.tokens * top_k) / static_cast<double>(r.experts);
  if (exact < 1.0 && capacity_factor != 0) {
    throw std::invalid_argument(fmt::format(
        "MoE: capacity {} * {} tokens * top-{} / {} experts = {} is below one token per expert", capacity_factor,
        r.tokens, top_k, r.experts, exact));
  }
  r.capacity = static_cast<std::int64_t>(std::ceil(exact));
  const std::vector<double> p = k::to_dtype(k::contiguous(probs), DType::Float64).cpu().to_vector<double>();
  const auto E = static_cast<std::size_t>(r.experts), K = static_cast<std::size_t>(top_k);
  r.choice.assign(static_cast<std::size_t>(r.tokens) * K, 0);
  r.routed.assign(E, 0);
  r.kept.assign(E, 0);
  for (std::size_t n = 0; n < static_cast<std::size_t>(r.tokens); ++n) {
    std::vector<bool> taken(E, false);
    for (std::size_t s = 0; s < K; ++s) {  // the s-th largest prob; strict > keeps the lower expert on ties
      std::size_t best = E;
      for (std::size_t e = 0; e < E; ++e)
        if (!taken[e] && (best == E || p[n * E + e] > p[n * E + best])) best = e;
      taken[best] = true;
      r.choice[n * K + s] = static_cast<std::int64_t>(best);
      ++r.routed[best];
    }
  }
  // Admission: choice s of every token before choice s + 1 of any, tokens in order.
  std::vector<std::vector<std::int64_t>> admitted(E);
  for (std::size_t s = 0; s < K; ++s) {
    for (std::size_t n = 0; n < static_cast<std::size_t>(r.tokens); ++n) {
      const auto e = static_cast<std::size_t>(r.choice[n * K + s]);
      if (r.kept[e] == r.capacity) continue;  // dropped
      ++r.kept[e];
      admitted[e].push_back(static_cast<std::int64_t>(n * K + s));
    }
  }
  for (const auto& a : admitted) r.order.insert(r.order.end(), a.begin(), a.end());
  return r;
}

MoE::MoE(const GPTConfig& config)
    : num_experts_(config.moe_experts), top_k_(config.moe_top_k), capacity_factor_(config.moe_capacity_factor),
      placement_(std::make_shared<LocalExperts>()) {
  if (top_k_ < 1 || top_k_ > num_experts_ || !(capacity_factor_ > 0)) {
    throw std::invalid_argument(fmt::format("MoE: need 1 <= top_k <= experts and capacity factor > 0, got top_k {}, "
                                            "{} experts, capacity factor {}",
                                            top_k_, num_experts_, capacity_factor_));
  }
  router = register_module("router", std::make_shared<Linear>(config.n_embd, num_experts_, false, config.dtype));
  for (std::int64_t e = 0; e < num_experts_; ++e)
    experts.push_back(register_module("experts." + std::to_string(e), std::make_shared<MLP>(config)));
}

void MoE::shard(std::int64_t first, std::int64_t count, std::shared_ptr<ExpertPlacement> placement) {
  std::vector<std::shared_ptr<MLP>> kept;
  for (std::int64_t e = 0; e < static_cast<std::int64_t>(experts.size()); ++e) {
    const std::int64_t global = first_ + e;
    if (global >= first && global < first + count) {
      kept.push_back(experts[static_cast<std::size_t>(e)]);
    } else {
      remove_module("experts." + std::to_string(global));
    }
  }
  experts = std::move(kept);
  first_ = first;
  placement_ = std::move(placement);
}

Tensor MoE::forward(const Tensor& x) {
  const std::int64_t C = x.size(-1), N = x.numel() / C, K = top_k_;
  const Tensor x2 = reshape(x, {N, C});
  const Tensor probs = softmax((*router)(x2), 1);  // [N, E]
  routing_ = route(probs.detach(), K, is_training() ? capacity_factor_ : 0.0);

  // Gates [N, k]: the chosen probs, renormalised over the k chosen (k >= 2).
  Tensor gates = gather(probs, 1, Tensor::from_vector(routing_.choice, {N, K}).to(x.device()));
  if (K > 1) gates = gates / sum(gates, {1}, true);

  // Load balancing: E sum_e f_e P_e, f constant.
  std::vector<double> f(routing_.routed.begin(), routing_.routed.end());
  for (double& v : f) v /= static_cast<double>(N * K);
  const Tensor f_t = k::to_dtype(Tensor::from_vector(f, {num_experts_}), x.dtype()).to(x.device());
  aux_loss_ = sum(mean(probs, {0}) * f_t) * static_cast<double>(num_experts_);

  // Dispatch the kept rows grouped by expert, run the experts, weight and add back per token.
  std::vector<std::int64_t> token(routing_.order.size());
  for (std::size_t i = 0; i < token.size(); ++i) token[i] = routing_.order[i] / K;
  const Tensor out = placement_->run(rows(x2, token), routing_.kept, [this](std::int64_t e, const Tensor& rows_e) {
    return (*experts[static_cast<std::size_t>(e - first_)])(rows_e);
  });
  const Tensor gate = rows(reshape(gates, {N * K, 1}), routing_.order);  // [M, 1]
  return reshape(scatter_rows(out * gate, token, N), x.shape());
}

Tensor MoE::rows(const Tensor& x, const std::vector<std::int64_t>& index) {
  return embedding(x, index_tensor(index, x.device()));
}

Tensor MoE::scatter_rows(const Tensor& x, const std::vector<std::int64_t>& index, std::int64_t n) {
  const Tensor idx = index_tensor(index, x.device());
  Tensor out = Tensor::zeros({n, x.size(1)}, x.dtype(), x.device());
  if (!index.empty()) k::index_add_(out, idx, k::contiguous(x));
  return autograd::record("scatter_rows", out, {x}, [idx](const Tensor& g) {
    return std::vector<Tensor>{k::index_select(g, idx)};
  });
}

Tensor MoE::cat_rows(const std::vector<Tensor>& parts) {
  std::int64_t total = 0;
  for (const Tensor& p : parts) total += p.size(0);
  Tensor out = Tensor::empty({total, parts.front().size(1)}, parts.front().dtype(), parts.front().device());
  std::vector<std::int64_t> sizes;
  std::int64_t offset = 0;
  for (const Tensor& p : parts) {
    k::copy_(k::narrow(out, 0, offset, p.size(0)), p);
    sizes.push_back(p.size(0));
    offset += p.size(0);
  }
  return autograd::record("cat_rows", out, parts, [sizes](const Tensor& g) {
    std::vector<Tensor> grads;
    std::int64_t at = 0;
    for (const std::int64_t n : sizes) {
      grads.push_back(k::contiguous(k::narrow(g, 0, at, n)));
      at += n;
    }
    return grads;
  });
}

}  // namespace ringgrad::nn
