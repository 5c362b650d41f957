// Mixture of experts on the grid: with real processes in float64, a GPT of 4 blocks with E = 4
// experts, top-2, a capacity that drops tokens and a load-balancing loss (coefficient 0.1),
// trained 3 AdamW steps under pp 2 (1F1B, AFAB, ZB-H1, interleaved with 2 virtual stages), tp 2,
// pp 2 x tp 2 and dp 2 x pp 2 (DDP), dp 2 x tp 2 (ZeRO-1) and dp 2 x pp 2 (FSDP), and with the
// experts sharded over ep 2 (ExpertDataParallel inside dp 2 x pp 2 and dp 2 x tp 2), has the loss (cross-entropy plus every stage's load-balancing
// loss), the gradient norm and every rank's piece of every parameter of one process that runs
// the same rows as the same micro-batches (capacity and the auxiliary loss are per forward
// call, moe.h): each micro-batch's (cross-entropy + aux) / (dp M), backward, one step. The
// experts are whole on every tp rank (on every ep rank its share of them; the comparison gathers
// them). Tolerance 1e-10 absolute (the sums run in another order).
// Sequence and context parallelism with experts are refused on every rank.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include "autograd/engine.h"
#include "collectives/communicator.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/grid/grid_training.h"
#include "nn/transformer/train_step.h"
#include "tests/parallel/model_parallel_support.h"
#include "tests/support/multiprocess.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;
using namespace ringgrad::nn::parallel;
using ringgrad::collectives::Communicator;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::max_abs_diff;
using ringgrad::test::run_ranks;

namespace {

constexpr double kTol = 1e-10;

GPTConfig moe_gpt() {
  GPTConfig c = ringgrad::test::small_gpt(4, 2, 8, 11);
  c.moe_experts = 4;
  c.moe_top_k = 2;
  c.moe_capacity_factor = 1.0;
  c.moe_aux_loss_coef = 0.1;
  return c;
}

// The piece of a whole parameter a tp rank holds: a MoE's router and experts whole, the rest as
// docs/model_parallel.md lays it out.
Tensor expected_piece(const std::string& name, const Tensor& whole, const Communicator& tp) {
  if (tp.world_size() == 1 || name.find("mlp.router.") != std::string::npos ||
      name.find("mlp.experts.") != std::string::npos)
    return whole.detach();
  return ringgrad::test::expected_piece(name, whole, tp);
}

struct Run {
  int dp = 1, pp = 1, tp = 1;
  PipelineSchedule schedule = PipelineSchedule::kOneForwardOneBackward;
  int virtual_stages = 1;
  std::string strategy = "ddp";
  int ep = 1;  // > 1: grid_expert_data_parallel instead of `strategy`
};

std::unique_ptr<DataParallel> strategy_of(const Run& run, std::shared_ptr<PipelineStage> stage, GridGroups& groups) {
  if (run.ep == 1) return ringgrad::test::grid_strategy(run.strategy, std::move(stage), groups);
  const PipelineStage& held = *stage;
  return grid_expert_data_parallel(std::move(stage), groups, run.ep, [&] { return weight_decay_groups(held, 0.1); },
                                   [](std::vector<ParamGroup> g) { return std::make_unique<AdamW>(std::move(g), ringgrad::test::kTestAdam); });
}

// Global batches of 8 rows; replica d takes rows [4 d, 4 d + 4) in 2 micro-batches of 2 rows.
void grid_moe_equals_one_process(const Run& run) {
  const int world_size = run.dp * run.pp * run.tp;
  const auto results = run_ranks(world_size, [&](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    GridGroups groups = GridGroups::make(world, run.dp, run.pp, run.tp);
    manual_seed(21);
    GPT whole(moe_gpt());
    auto stage = make_stage(whole, groups, false, run.virtual_stages);
    auto mine = strategy_of(run, stage, groups);
    AdamW serial(weight_decay_groups(whole, 0.1), ringgrad::test::kTestAdam);
    constexpr int kMicroBatches = 2;
    const std::int64_t parts = run.dp * kMicroBatches, rows = 8 / parts;
    Generator gen(31);
    std::int64_t drops = 0;
    for (int step = 0; step < 3; ++step) {
      const auto [x, y] = ringgrad::test::random_batch(gen, 8, 11);
      double expected_loss = 0;
      whole.zero_grad();
      for (std::int64_t i = 0; i < parts; ++i) {  // replica i / M's micro-batch i % M
        const Tensor xi = kernels::contiguous(kernels::narrow(x, 0, i * rows, rows));
        const Tensor yi = kernels::contiguous(kernels::narrow(y, 0, i * rows, rows));
        const Tensor loss = training_loss(whole, whole(xi), yi) * (1.0 / static_cast<double>(parts));
        for (const auto& block : whole.h) drops += block->moe->routing().dropped();
        expected_loss += loss.item<double>();
        backward(loss);
      }
      const double whole_norm = std::sqrt(grad_norm_squared(whole.parameters()));
      serial.step();
      mine->zero_grad();
      const double got = grid_step(*mine, groups, x, y, kMicroBatches, run.schedule).loss;
      const double norm = mine->step(1e9);  // a bound never reached: the norm, no clipping
      check(std::abs(got - expected_loss) < kTol,
            fmt::format("rank {} step {}: loss {} vs one process {}", world.rank(), step, got, expected_loss));
      check(std::abs(norm - whole_norm) < kTol,
            fmt::format("rank {} step {}: gradient norm {} vs one process {}", world.rank(), step, norm, whole_norm));
    }
    check(drops > 0, "the capacity drops no token: the test would not cover drops");
    std::map<std::string, Tensor> expected;
    for (auto& [name, t] : whole.named_parameters()) expected[name] = t;
    std::int64_t experts = 0;
    for (auto& [name, t] : full_state_dict(*mine)) {  // this stage's whole tensors (every expert), on dp rank 0
      if (name.starts_with("optimizer.")) continue;
      experts += name.find("mlp.experts.") != std::string::npos;
      const double d = max_abs_diff(t, expected_piece(name, expected.at(name), *groups.tp));
      check(d < kTol, fmt::format("rank {}: {} differs from one process's by {}", world.rank(), name, d));
    }
    if (groups.dp->rank() == 0)  // 4 blocks over pp stages, 4 experts of 4 tensors each
      check(experts == 4 / run.pp * 4 * 4, fmt::format("rank {}: {} expert tensors compared", world.rank(), experts));
  });
  INFO(fmt::format("dp {} x pp {} x tp {}, {} virtual stage(s), {}, ep {}: {}", run.dp, run.pp, run.tp,
                   run.virtual_stages, run.strategy, run.ep, describe(results)));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

TEST_CASE("grid: MoE (E 4, top-2, drops, aux loss) under pp 2 with 1F1B, AFAB, ZB-H1 and interleaved 1F1B trains what one process trains", "[moe]") {
  grid_moe_equals_one_process({.pp = 2});
  grid_moe_equals_one_process({.pp = 2, .schedule = PipelineSchedule::kAllForwardAllBackward});
  grid_moe_equals_one_process({.pp = 2, .schedule = PipelineSchedule::kZeroBubbleH1});
  grid_moe_equals_one_process({.pp = 2, .schedule = PipelineSchedule::kInterleaved1F1B, .virtual_stages = 2});
}

TEST_CASE("grid: MoE (E 4, top-2, drops, aux loss) under tp 2, pp 2 x tp 2 and dp 2 x pp 2 trains what one process trains", "[moe]") {
  grid_moe_equals_one_process({.tp = 2});
  grid_moe_equals_one_process({.pp = 2, .tp = 2});
  grid_moe_equals_one_process({.dp = 2, .pp = 2});
}

TEST_CASE("grid: MoE under ZeRO-1 inside dp 2 x tp 2 and FSDP inside dp 2 x pp 2 trains what one process trains", "[moe]") {
  grid_moe_equals_one_process({.dp = 2, .tp = 2, .strategy = "zero1"});
  grid_moe_equals_one_process({.dp = 2, .pp = 2, .strategy = "fsdp"});
}

TEST_CASE("grid: MoE with --ep 2 (experts sharded over 2 consecutive dp ranks) inside dp 2 x pp 2 and dp 2 x tp 2 trains what one process trains", "[moe][expert_parallel]") {
  grid_moe_equals_one_process({.dp = 2, .pp = 2, .ep = 2});
  grid_moe_equals_one_process({.dp = 2, .tp = 2, .ep = 2});
}

TEST_CASE("grid: MoE under sequence or context parallelism is refused on every rank, naming why", "[moe]") {
  const auto results = run_ranks(2, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    manual_seed(21);
    const GPT whole(moe_gpt());
    for (const bool context : {false, true}) {
      GridGroups groups = GridGroups::make(world, 1, 1, context ? 1 : 2, context ? 2 : 1);
      try {
        make_stage(whole, groups, /*sequence_parallel=*/!context);
        check(false, fmt::format("rank {}: MoE under {} accepted", world.rank(), context ? "cp 2" : "tp 2 (sp)"));
      } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        check(what.find(context ? "context parallelism" : "sequence parallelism") != std::string::npos &&
                  what.find("mixture-of-experts") != std::string::npos,
              "message names why: " + what);
      }
    }
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}
