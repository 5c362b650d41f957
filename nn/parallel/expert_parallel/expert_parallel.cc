// ExpertParallel: the counts exchange, the two all_to_all_v's (autograd ops whose backward is
// the reverse exchange), the regrouping of received rows by local expert; the groups, the
// sharding of a GPT's MoE layers and the EP x DP gradient reduction.
#include "nn/parallel/expert_parallel/expert_parallel.h"

#include <fmt/format.h>

#include <numeric>
#include <stdexcept>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "nn/parallel/model_parallel/grad_reduce.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Communicator;
namespace k = kernels;

// Rows [sum send, C]: send[q] rows to rank q -> [sum recv, C], recv[q] rows from rank q.
Tensor exchange_rows(const Tensor& x, const std::vector<std::int64_t>& send, const std::vector<std::int64_t>& recv,
                     Communicator& group) {
  const std::int64_t C = x.size(1);
  const Tensor in = k::contiguous(x);
  Tensor out = Tensor::empty({std::accumulate(recv.begin(), recv.end(), std::int64_t{0}), C}, x.dtype(), x.device());
  std::vector<std::size_t> sc, rc;
  for (const std::int64_t n : send) sc.push_back(static_cast<std::size_t>(n * C));
  for (const std::int64_t n : recv) rc.push_back(static_cast<std::size_t>(n * C));
  group.all_to_all_v(synced_buffer(in), sc, synced_buffer(out), rc);
  return out;
}

// The autograd op: forward one exchange, backward the same exchange with send and recv swapped.
Tensor all_to_all_rows(const Tensor& x, const std::vector<std::int64_t>& send, const std::vector<std::int64_t>& recv,
                       Communicator& group) {
  return autograd::record("all_to_all_v", exchange_rows(x, send, recv, group), {x},
                          [send, recv, &group](const Tensor& g) {
                            return std::vector<Tensor>{exchange_rows(g, recv, send, group)};
                          });
}

}  // namespace

ExpertParallel::ExpertParallel(Communicator& group, std::int64_t experts)
    : group_(group), experts_(experts), local_(experts / group.world_size()) {}

Tensor ExpertParallel::run(const Tensor& rows, const std::vector<std::int64_t>& counts, const ExpertFn& expert) {
  const auto p = static_cast<std::size_t>(group_.world_size()), L = static_cast<std::size_t>(local_);
  // Counts first: block q of `counts` (rank q's L experts) goes to rank q; block s of
  // `from` is what rank s sends for each of this rank's experts.
  Tensor from = Tensor::empty({experts_}, DType::Int64);
  const Tensor to = Tensor::from_vector(counts, {experts_});
  group_.all_to_all(synced_buffer(to), synced_buffer(from));
  const std::vector<std::int64_t> cnt = from.to_vector<std::int64_t>();
  sent_.assign(p, 0);
  received_.assign(p, 0);
  for (std::size_t q = 0; q < p; ++q)
    for (std::size_t j = 0; j < L; ++j) {
      sent_[q] += counts[q * L + j];
      received_[q] += cnt[q * L + j];
    }
  const Tensor recv = all_to_all_rows(rows, sent_, received_, group_);

  // Received rows are grouped by source, then expert; regroup them by expert, then source.
  std::vector<std::int64_t> perm, per_expert(L, 0);
  for (std::size_t j = 0; j < L; ++j) {
    std::int64_t source_start = 0;
    for (std::size_t s = 0; s < p; ++s) {
      std::int64_t at = source_start;
      for (std::size_t i = 0; i < j; ++i) at += cnt[s * L + i];
      for (std::int64_t r = 0; r < cnt[s * L + j]; ++r) perm.push_back(at + r);
      per_expert[j] += cnt[s * L + j];
      source_start += received_[s];
    }
  }
  const Tensor grouped = MoE::rows(recv, perm);
  std::vector<Tensor> parts;
  std::int64_t offset = 0;
  const auto first = static_cast<std::int64_t>(static_cast<std::size_t>(group_.rank()) * L);
  for (std::size_t j = 0; j < L; ++j) {
    if (per_expert[j] > 0) parts.push_back(expert(first + static_cast<std::int64_t>(j), narrow(grouped, 0, offset, per_expert[j])));
    offset += per_expert[j];
  }
  // Nothing received: keep the graph through the exchange so backward's collectives run here too.
  const Tensor out = parts.empty() ? grouped * 0.0 : MoE::cat_rows(parts);
  return all_to_all_rows(MoE::scatter_rows(out, perm, recv.size(0)), received_, sent_, group_);
}

ExpertParallelGroups expert_parallel_groups(Communicator& world, int ep) {
  if (ep < 1 || world.world_size() % ep != 0) {
    throw std::invalid_argument(fmt::format("expert parallelism on rank {}: an expert-parallel group of {} ranks does "
                                            "not divide the world of {}",
                                            world.rank(), ep, world.world_size()));
  }
  ExpertParallelGroups g;
  g.ep = world.split(world.rank() / ep, world.rank(), "ep");
  g.expert_dp = world.split(world.rank() % ep, world.rank(), "expert_dp");
  return g;
}

std::vector<std::shared_ptr<ExpertParallel>> shard_experts(GPT& model, Communicator& ep_group) {
  std::vector<std::shared_ptr<MoE>> layers;
  for (auto& block : model.h) layers.push_back(block->moe);
  return shard_experts(layers, ep_group);
}

std::vector<std::shared_ptr<ExpertParallel>> shard_experts(const std::vector<std::shared_ptr<MoE>>& layers,
                                                           Communicator& ep_group) {
  const std::int64_t E = layers.empty() || !layers.front() ? 0 : layers.front()->num_experts(), ep = ep_group.world_size();
  if (E < 1 || E % ep != 0) {
    throw std::invalid_argument(fmt::format("expert parallelism on rank {}: {} experts do not divide over an "
                                            "expert-parallel group of {} ranks",
                                            ep_group.rank(), E, ep));
  }
  std::vector<std::shared_ptr<ExpertParallel>> placements;
  for (const auto& moe : layers) {
    auto placement = std::make_shared<ExpertParallel>(ep_group, E);
    moe->shard(ep_group.rank() * (E / ep), E / ep, placement);
    placements.push_back(placement);
  }
  return placements;
}

bool is_expert_parameter(const std::string& name) { return name.find(".experts.") != std::string::npos; }

void reduce_expert_parallel_grads(const Module& model, Communicator& world, Communicator& expert_dp) {
  std::vector<Tensor> dense, expert;
  for (const auto& [name, param] : model.named_parameters())
    (is_expert_parameter(name) ? expert : dense).push_back(param);
  all_reduce_grads(dense, world, collectives::ReduceOp::AVG);
  all_reduce_grads(expert, expert_dp, collectives::ReduceOp::SUM);
  const double scale = 1.0 / static_cast<double>(world.world_size());
  for (Tensor& p : expert) p.set_grad(p.grad() * scale);
}

}  // namespace ringgrad::nn::parallel
