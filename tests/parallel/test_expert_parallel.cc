// The mixture-of-experts layer and expert parallelism. The routing table of a hand-written case;
// the layer's gradient (rows, gates, router, experts, load-balancing loss, with tokens dropped)
// against central differences; with real processes in float64, a GPT with E = 4 experts, top-2
// and a capacity that drops tokens, trained 3 AdamW steps under EP = 2 and EP = 2 x DP = 2, has
// the loss and every parameter of one process that runs the same global batch as one
// micro-batch per rank (capacity and the auxiliary loss are per forward call, moe.h).
// Tolerance 1e-10 absolute (the sums run in another order). Under both, the gathered checkpoint
// is one process's, and one process's loads back. Bad sizes are refused on every rank.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/expert_parallel/expert_data_parallel.h"
#include "nn/parallel/expert_parallel/expert_parallel.h"
#include "nn/safetensors.h"
#include "nn/parallel/tensor_buffer.h"
#include "nn/transformer/checkpoint.h"
#include "nn/transformer/moe.h"
#include "nn/transformer/train_step.h"
#include "support/gradcheck.h"
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

GPTConfig moe_gpt(double capacity_factor) {
  GPTConfig c = ringgrad::test::small_gpt(2, 2, 8, 11);
  c.moe_experts = 4;
  c.moe_top_k = 2;
  c.moe_capacity_factor = capacity_factor;
  c.moe_aux_loss_coef = 0.1;
  return c;
}

std::int64_t dropped(const GPT& model) {
  std::int64_t n = 0;
  for (const auto& block : model.h) n += block->moe->routing().dropped();
  return n;
}

// world ranks: ep consecutive ranks share the experts; 3 steps on batches of 8 rows, rank r
// taking rows [r 8/world, (r+1) 8/world); one process runs the same rows as world micro-batches.
void expert_parallel_equals_one_process(int world_size, int ep) {
  const auto results = run_ranks(world_size, [ep](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    const ExpertParallelGroups groups = expert_parallel_groups(world, ep);
    const GPTConfig cfg = moe_gpt(1.0);
    manual_seed(11);
    GPT one(cfg);
    manual_seed(11);
    GPT mine(cfg);
    shard_experts(mine, *groups.ep);
    AdamW one_opt(weight_decay_groups(one, 0.1), ringgrad::test::kTestAdam);
    AdamW my_opt(weight_decay_groups(mine, 0.1), ringgrad::test::kTestAdam);
    const std::int64_t W = world.world_size(), rows = 8 / W;
    Generator gen(5);
    std::int64_t one_drops = 0;
    for (int step = 0; step < 3; ++step) {
      const auto [x, y] = ringgrad::test::random_batch(gen, 8, cfg.vocab_size);
      double one_loss = 0;
      one.zero_grad();
      for (std::int64_t r = 0; r < W; ++r) {
        const Tensor xr = kernels::contiguous(kernels::narrow(x, 0, r * rows, rows));
        const Tensor yr = kernels::contiguous(kernels::narrow(y, 0, r * rows, rows));
        const Tensor loss = training_loss(one, one(xr), yr) * (1.0 / static_cast<double>(W));
        one_drops += dropped(one);
        one_loss += loss.item<double>();
        backward(loss);
      }
      one_opt.step();

      const Tensor xr = kernels::contiguous(kernels::narrow(x, 0, world.rank() * rows, rows));
      const Tensor yr = kernels::contiguous(kernels::narrow(y, 0, world.rank() * rows, rows));
      mine.zero_grad();
      const Tensor loss = training_loss(mine, mine(xr), yr);
      backward(loss);
      reduce_expert_parallel_grads(mine, world, *groups.expert_dp);
      my_opt.step();
      Tensor mean_loss = Tensor::scalar(loss.item<double>(), DType::Float64);
      world.all_reduce(synced_buffer(mean_loss), synced_buffer(mean_loss), collectives::ReduceOp::AVG);
      check(std::abs(mean_loss.item<double>() - one_loss) < kTol,
            fmt::format("rank {} step {}: loss {} vs one process {}", world.rank(), step, mean_loss.item<double>(), one_loss));
    }
    check(one_drops > 0, "the capacity drops no token: the test would not cover drops");
    const StateDict whole = one.state_dict();
    std::int64_t compared = 0;
    for (const auto& [name, p] : mine.named_parameters()) {
      const double d = max_abs_diff(p, whole.at(name));
      check(d < kTol, fmt::format("rank {}: {} differs from one process's by {}", world.rank(), name, d));
      ++compared;
    }
    // Each of the 2 layers drops the 4 - 4/ep experts held elsewhere, 4 tensors each.
    const std::int64_t expected = static_cast<std::int64_t>(one.named_parameters().size()) - 2 * (4 - 4 / ep) * 4;
    check(compared == expected, fmt::format("rank {}: {} parameters, expected {}", world.rank(), compared, expected));
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

// A checkpoint under EP: 2 AdamW steps of ExpertDataParallel, then full_state_dict on rank 0
// holds exactly one process's checkpoint (nn::save_checkpoint of the same training: every
// expert, its moments, under one process's names) plus the step count; loading that one-process
// checkpoint into a fresh, differently seeded ExpertDataParallel gives every rank its experts.
void expert_checkpoint_is_one_process(int world_size, int ep) {
  const auto results = run_ranks(world_size, [ep](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    const GPTConfig cfg = moe_gpt(1.0);
    manual_seed(11);
    GPT one(cfg);
    AdamW one_opt(weight_decay_groups(one, 0.1), ringgrad::test::kTestAdam);
    auto adamw = [](std::vector<ParamGroup> g) -> std::unique_ptr<Optimizer> {
      return std::make_unique<AdamW>(std::move(g), ringgrad::test::kTestAdam);
    };
    manual_seed(11);
    ExpertDataParallel dp(std::make_shared<GPT>(cfg), world, ep, 0.1, adamw);
    const std::int64_t W = world.world_size(), rows = 8 / W;
    Generator gen(5);
    for (int step = 0; step < 2; ++step) {
      const auto [x, y] = ringgrad::test::random_batch(gen, 8, cfg.vocab_size);
      one.zero_grad();
      for (std::int64_t r = 0; r < W; ++r) {
        const Tensor xr = kernels::contiguous(kernels::narrow(x, 0, r * rows, rows));
        const Tensor yr = kernels::contiguous(kernels::narrow(y, 0, r * rows, rows));
        backward(training_loss(one, one(xr), yr) * (1.0 / static_cast<double>(W)));
      }
      one_opt.step();
      const Tensor xr = kernels::contiguous(kernels::narrow(x, 0, world.rank() * rows, rows));
      const Tensor yr = kernels::contiguous(kernels::narrow(y, 0, world.rank() * rows, rows));
      dp.zero_grad();
      dp.backward(training_loss(static_cast<GPT&>(dp.module()), dp.forward(xr), yr));
      dp.step();
    }
    const std::string path = (std::filesystem::temp_directory_path() /
                              fmt::format("ringgrad_ep_checkpoint_{}_{}.safetensors", W, world.rank())).string();
    save_checkpoint(path, one, one_opt, TrainState{2, Generator(1), Generator(2)});
    StateDict reference = load_safetensors(path).tensors;
    std::filesystem::remove(path);
    reference.emplace("optimizer.steps", Tensor::full({1}, 2.0, DType::Int64));

    // full: the gathered dict (rank 0), compared with the reference entry by entry.
    auto check_whole = [&](const StateDict& full, const std::string& what) {
      if (world.rank() != 0) return check(full.empty(), fmt::format("rank {}: {} not empty", world.rank(), what));
      check(full.size() == reference.size(), fmt::format("{}: {} entries, one process's checkpoint {}", what,
                                                         full.size(), reference.size()));
      for (const auto& [name, t] : reference) {
        const auto it = full.find(name);
        check(it != full.end(), fmt::format("{}: no '{}'", what, name));
        const double d = max_abs_diff(it->second, t);
        check(d < kTol, fmt::format("{}: '{}' differs from one process's by {}", what, name, d));
      }
    };
    check_whole(full_state_dict(dp), "the EP checkpoint");
    manual_seed(99);
    ExpertDataParallel fresh(std::make_shared<GPT>(cfg), world, ep, 0.1, adamw);
    load_full_state_dict(fresh, reference);
    check_whole(full_state_dict(fresh), "the one-process checkpoint loaded under EP");
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

TEST_CASE("moe: the routing table of a hand-written case (top-2, capacity 2, drops)", "[moe]") {
  // 3 tokens, 3 experts: top-2 choices (0,1), (0,2), (0,1); capacity ceil(1 * 3 * 2 / 3) = 2.
  // First choices: token 0 -> 0, token 1 -> 0, token 2 -> 0 (dropped, expert 0 full). Second
  // choices: token 0 -> 1, token 1 -> 2, token 2 -> 1.
  const Tensor probs = Tensor::from_vector(std::vector<double>{0.5, 0.3, 0.2, 0.6, 0.1, 0.3, 0.7, 0.2, 0.1}, {3, 3});
  const Routing r = route(probs, 2, 1.0);
  CHECK(r.capacity == 2);
  CHECK(r.choice == std::vector<std::int64_t>{0, 1, 0, 2, 0, 1});
  CHECK(r.routed == std::vector<std::int64_t>{3, 2, 1});
  CHECK(r.kept == std::vector<std::int64_t>{2, 2, 1});
  CHECK(r.order == std::vector<std::int64_t>{0, 2, 1, 5, 3});  // expert 0: t0, t1; expert 1: t0, t2; expert 2: t1
  CHECK(r.dropped() == 1);
}

TEST_CASE("moe: the layer's gradient equals central differences, tokens dropped", "[moe]") {
  for (const std::int64_t top_k : {1, 2}) {
    GPTConfig cfg = moe_gpt(0.75);
    cfg.moe_top_k = top_k;
    manual_seed(3);
    MoE moe(cfg);
    const Tensor x = testing::random_input({2, 5, 8}, 9);
    const std::vector<Tensor> inputs{x, moe.router->weight, moe.experts[1]->c_fc->weight, moe.experts[2]->c_proj->bias};
    const std::string error = testing::gradcheck([&](const std::vector<Tensor>& in) { return moe(in[0]) + moe.aux_loss(); },
                                                 inputs);
    INFO("top-" << top_k << ": " << error);
    CHECK(error.empty());
    CHECK(moe.routing().dropped() > 0);
  }
}

TEST_CASE("expert parallel: E 4, top-2, EP 2 equals one process", "[moe][expert_parallel]") {
  expert_parallel_equals_one_process(2, 2);
}

TEST_CASE("expert parallel: E 4, top-2, EP 2 x DP 2 equals one process", "[moe][expert_parallel]") {
  expert_parallel_equals_one_process(4, 2);
}

TEST_CASE("expert parallel: the checkpoint of EP 2 and of EP 2 x DP 2 is one process's, and loads back", "[moe][expert_parallel][checkpoint]") {
  expert_checkpoint_is_one_process(2, 2);
  expert_checkpoint_is_one_process(4, 2);
}

TEST_CASE("expert parallel: experts that do not divide, a capacity below one token, refused on every rank", "[moe][expert_parallel]") {
  const auto results = run_ranks(3, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    GPT model(moe_gpt(1.0));
    try {
      shard_experts(model, world);
      check(false, "4 experts over 3 ranks accepted");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      check(what.find("4 experts") != std::string::npos && what.find("3 ranks") != std::string::npos,
            "message names the numbers: " + what);
    }
    try {
      expert_parallel_groups(world, 2);
      check(false, "an expert-parallel group of 2 in a world of 3 accepted");
    } catch (const std::invalid_argument& e) {
      check(std::string(e.what()).find("world of 3") != std::string::npos, e.what());
    }
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());

  const auto capacity = run_ranks(2, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    GPT model(moe_gpt(0.05));  // 0.05 * 8 tokens * 2 / 4 experts = 0.2
    shard_experts(model, world);
    try {
      model(Tensor::zeros({1, 8}, DType::Int64));
      check(false, "a capacity of 0.2 tokens accepted");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      check(what.find("8 tokens") != std::string::npos && what.find("0.05") != std::string::npos &&
                what.find("below one token") != std::string::npos,
            "message names the numbers: " + what);
    }
  });
  INFO(describe(capacity));
  for (const auto& r : capacity) CHECK(r.ok());
}
