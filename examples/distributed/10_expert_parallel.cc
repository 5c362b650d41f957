// 10: one mixture-of-experts layer (nn/transformer/moe.h) with its experts sharded over the
// ranks (nn/parallel/expert_parallel): E = 2 p experts, 2 per rank, top-2, capacity factor
// 1.25. Every rank routes its own N tokens, sends each kept (token, expert) row to the rank
// holding the expert with one all_to_all_v (after an all_to_all of the per-expert counts), and
// gets the outputs back with a second; backward runs both in reverse. Prints who sends how many
// rows to whom in one step, and the rows that leave their rank: counted by the exchange, from
// the routing table (kept rows whose expert lives elsewhere) and the uniform-routing formula
// N k (p - 1) / p per rank; then the bytes of the four exchanges (two forward, two backward)
// the communicator was asked to move.
//
//   build/bin/ringgrad-run --nproc-per-node 4 build/bin/10_expert_parallel
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "examples/distributed/launch.h"
#include "nn/parallel/expert_parallel/expert_parallel.h"
#include "nn/parallel/tensor_buffer.h"
#include "nn/transformer/moe.h"
#include "tensor/random.h"

using namespace ringgrad;

int main() try {
  collectives::Communicator ep(launch::job_or_exit("10_expert_parallel"));
  const int rank = ep.rank(), p = ep.world_size();
  constexpr std::int64_t kTokens = 256, kC = 32, kTopK = 2;
  nn::GPTConfig cfg;
  cfg.n_embd = kC;
  cfg.moe_experts = 2 * p;
  cfg.moe_top_k = kTopK;
  cfg.moe_capacity_factor = 1.25;
  manual_seed(1);  // the same whole layer on every rank, then each keeps its experts
  nn::MoE moe(cfg);
  const std::int64_t local = cfg.moe_experts / p;
  auto placement = std::make_shared<nn::parallel::ExpertParallel>(ep, cfg.moe_experts);
  moe.shard(rank * local, local, placement);

  Generator gen(100 + static_cast<std::uint64_t>(rank));  // each rank's own tokens
  Tensor x = Tensor::zeros({1, kTokens, kC});
  kernels::normal_(x, 0.0, 1.0, gen);
  x.set_requires_grad(true);  // as a block's input does: the dispatch's backward exchange runs too
  ep.reset_stats();
  const Tensor y = moe(x);
  backward(sum(y * y) + moe.aux_loss());

  // Rows that leave this rank, three ways.
  const nn::Routing& r = moe.routing();
  std::int64_t from_table = 0;
  for (const std::int64_t a : r.order) from_table += r.choice[static_cast<std::size_t>(a)] / local != rank;
  const std::vector<std::int64_t>& sent = placement->sent();
  const std::int64_t counted = std::accumulate(sent.begin(), sent.end(), std::int64_t{0}) - sent[static_cast<std::size_t>(rank)];
  const double formula = static_cast<double>(kTokens * kTopK * (p - 1)) / p;

  // Rank 0 prints the matrix: row s, column q = rows rank s sent rank q.
  Tensor mine = Tensor::from_vector(std::vector<std::int64_t>{sent.begin(), sent.end()}, {p});
  Tensor all = Tensor::empty({p, p}, DType::Int64);
  ep.all_gather(nn::parallel::synced_buffer(mine), nn::parallel::synced_buffer(all));
  const std::vector<std::int64_t> matrix = all.to_vector<std::int64_t>();
  if (rank == 0) {
    fmt::print("{} ranks, {} experts ({} per rank), top-{}, {} tokens per rank, capacity {} rows per expert\n", p,
               cfg.moe_experts, local, kTopK, kTokens, r.capacity);
    fmt::print("rows sent in the dispatch all_to_all_v (row: from rank, column: to rank; the combine sends them back)\n");
    for (int s = 0; s < p; ++s)
      fmt::print("  rank {}: {}\n", s, std::vector<std::int64_t>(matrix.begin() + s * p, matrix.begin() + (s + 1) * p));
  }
  ep.barrier();
  fmt::print("rank {}: {} rows kept, {} dropped; off-rank rows: counted {}, from the routing table {}, uniform "
             "formula N k (p-1)/p = {:.1f}\n", rank, r.order.size(), r.dropped(), counted, from_table, formula);
  // The communicator sizes an all_to_all_v by its whole send buffer (own block included): the
  // dispatch and the combine's backward send this rank's M kept rows, the combine and the
  // dispatch's backward the R rows it received; C float32 each.
  const std::vector<std::int64_t>& received = placement->received();
  const auto R = static_cast<std::uint64_t>(std::accumulate(received.begin(), received.end(), std::int64_t{0}));
  const collectives::CommStats stats = ep.stats();
  const std::uint64_t a2av = stats.by_kind.count(collectives::CollKind::kAllToAllV) != 0
                                 ? stats.by_kind.at(collectives::CollKind::kAllToAllV).bytes : 0;
  const std::uint64_t expected = 2 * (r.order.size() + R) * kC * sizeof(float);
  ep.barrier();
  const std::int64_t returned = static_cast<std::int64_t>(R) - received[static_cast<std::size_t>(rank)];
  fmt::print("rank {}: all_to_all_v bytes counted by the communicator {}, 2 (M + R) C 4 = 2 ({} + {}) {} 4 = {}; "
             "of them leaving this rank 2 ({} + {}) {} 4 = {}\n", rank, a2av, r.order.size(), R, kC, expected,
             counted, returned, kC, 2 * (counted + returned) * kC * 4);
  return counted == from_table && a2av == expected ? 0 : 1;
} catch (const std::exception& e) {
  return launch::report("10_expert_parallel", e);
}
