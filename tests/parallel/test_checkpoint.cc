// A checkpoint saved by 2 ranks resumes on 1 rank and on 2 ranks, under any strategy, and the
// next step's loss is the one the uninterrupted run computes; with Muon beside AdamW (whose
// groups hold different states, and whose orthogonalisations the ranks split) too, where one
// process's own steps must also give that loss.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/linear.h"
#include "nn/muon_adamw.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/data_parallel/make_data_parallel.h"
#include "nn/parallel/data_parallel/sharded_muon.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/tensor_buffer.h"
#include "nn/safetensors.h"
#include "tests/support/multiprocess.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;
using namespace ringgrad::nn::parallel;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::run_ranks;

namespace {

constexpr std::int64_t kGlobalBatch = 8;

std::shared_ptr<Sequential> make_model(std::uint64_t seed) {
  manual_seed(seed);  // a different seed per run: the checkpoint, not the seed, must decide
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(5, 7, true, DType::Float64), std::make_shared<ReLU>(),
      std::make_shared<Linear>(7, 4, true, DType::Float64)});
}

std::unique_ptr<Optimizer> adamw(std::vector<ParamGroup> groups) {
  return std::make_unique<AdamW>(std::move(groups), AdamOptions{0.05});
}

std::pair<Tensor, Tensor> batch(int step) {
  Generator gen(500 + static_cast<std::uint64_t>(step));
  Tensor x = Tensor::zeros({kGlobalBatch, 5}, DType::Float64);
  kernels::normal_(x, 0.0, 1.0, gen);
  std::vector<std::int64_t> y;
  for (int i = 0; i < kGlobalBatch; ++i) y.push_back(static_cast<std::int64_t>(gen.next_below(4)));
  return {x, Tensor::from_vector(y, {kGlobalBatch})};
}

// One training step on this rank's rows of batch `step`; returns the global mean loss.
double train_step(DataParallel& dp, int step) {
  const int world = dp.comm().world_size(), rank = dp.comm().rank();
  const std::int64_t b = kGlobalBatch / world;
  auto [x, y] = batch(step);
  dp.zero_grad();
  const Tensor loss = cross_entropy(dp.forward(kernels::contiguous(kernels::narrow(x, 0, rank * b, b))),
                                    kernels::contiguous(kernels::narrow(y, 0, rank * b, b)));
  dp.backward(loss);
  dp.step();
  Tensor global = Tensor::full({1}, loss.item<double>(), DType::Float64);
  dp.comm().all_reduce(synced_buffer(global), synced_buffer(global), collectives::ReduceOp::AVG);
  return global.item<double>();
}

std::filesystem::path temp(const std::string& name) { return std::filesystem::temp_directory_path() / name; }

// Groups for the optimizer, and the optimizer over them.
using Groups = std::function<std::vector<ParamGroup>(Sequential&)>;
using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>, collectives::Communicator&)>;

// 2 ranks train 3 steps under `strategy` and save; the 4th step's loss is the target. Then a
// differently seeded model on 1 and on 2 ranks loads the checkpoint and must take that step.
// With `one_process_too`, a single process's own 4th step (no checkpoint) must give it as well.
// `optimizer` names the files too: test cases run as concurrent processes under ctest -j.
void save_and_resume(const std::string& optimizer, const std::string& strategy, const Groups& groups,
                     const MakeOptimizer& make_optimizer, bool one_process_too) {
  const std::string stem = "ringgrad_ckpt_" + optimizer + "_" + strategy;
  const std::string ckpt = temp(stem + ".safetensors").string();
  const std::string expected_file = temp(stem + ".loss").string();
  auto wrap = [&](std::shared_ptr<Sequential> model, collectives::Communicator& comm) {
    return make_data_parallel(strategy, model, comm, groups(*model),
                              [&](std::vector<ParamGroup> g) { return make_optimizer(std::move(g), comm); });
  };
  auto first = run_ranks(2, [&](const transport::Config& config) {
    collectives::Communicator comm(config);
    auto dp = wrap(make_model(1), comm);
    for (int step = 0; step < 3; ++step) train_step(*dp, step);
    StateDict state = full_state_dict(*dp);
    if (comm.rank() == 0) save_safetensors(ckpt, state, {{"step", "3"}});
    comm.barrier();
    const double next = train_step(*dp, 3);
    if (comm.rank() == 0) std::ofstream(expected_file) << fmt::format("{:.17g}", next);
  });
  INFO(strategy << " save: " << describe(first));
  for (auto& r : first) REQUIRE(r.ok());
  double expected = 0;
  std::ifstream(expected_file) >> expected;

  for (int world : {1, 2}) {
    auto resumed = run_ranks(world, [&](const transport::Config& config) {
      collectives::Communicator comm(config);
      auto dp = wrap(make_model(2), comm);
      load_full_state_dict(*dp, load_safetensors(ckpt).tensors);
      const double next = train_step(*dp, 3);
      check(std::abs(next - expected) < 1e-12,
            fmt::format("{} resumed on {} rank(s): next loss {:.17g}, uninterrupted {:.17g}", strategy, world, next, expected));
    });
    INFO(strategy << " resume on " << world << ": " << describe(resumed));
    for (auto& r : resumed) REQUIRE(r.ok());
  }
  if (one_process_too) {
    auto alone = run_ranks(1, [&](const transport::Config& config) {
      collectives::Communicator comm(config);
      auto dp = wrap(make_model(1), comm);
      for (int step = 0; step < 3; ++step) train_step(*dp, step);
      const double next = train_step(*dp, 3);
      check(std::abs(next - expected) < 1e-12,
            fmt::format("{} on one process: 4th loss {:.17g}, 2 ranks {:.17g}", strategy, next, expected));
    });
    INFO(strategy << " one process: " << describe(alone));
    for (auto& r : alone) REQUIRE(r.ok());
  }
  std::filesystem::remove(ckpt);
  std::filesystem::remove(expected_file);
}

}  // namespace

TEST_CASE("a checkpoint saved on 2 ranks resumes on 1 and on 2 ranks with the same next loss") {
  for (std::string strategy : {"ddp", "zero2", "fsdp"})
    save_and_resume("adamw", strategy, [](Sequential& m) { return std::vector<ParamGroup>{{m.parameters()}}; },
                    [](std::vector<ParamGroup> g, collectives::Communicator&) { return adamw(std::move(g)); }, false);
}

TEST_CASE("Muon on the matrices beside AdamW on the biases, sharded over the ranks: 2 ranks equal one process, and resume with both states") {
  // Group 0 the two weight matrices (Muon's), group 1 the biases (AdamW's).
  const Groups split = [](Sequential& m) {
    ParamGroup matrices{{}, 0.01}, vectors{{}, 0.0};
    for (const Tensor& p : m.parameters()) (p.dim() == 2 ? matrices : vectors).params.push_back(p);
    return std::vector<ParamGroup>{matrices, vectors};
  };
  // On 2 ranks matrix 0 is orthogonalised by rank 0 and matrix 1 by rank 1 (sharded_muon.h).
  const MakeOptimizer muon_adamw = [](std::vector<ParamGroup> groups, collectives::Communicator& comm) -> std::unique_ptr<Optimizer> {
    return std::make_unique<MuonWithAdamW>(std::move(groups), 1, shard_over(MuonOptions{0.05}, comm), AdamOptions{0.01});
  };
  for (std::string strategy : {"ddp", "ddp-naive"}) save_and_resume("muon", strategy, split, muon_adamw, true);
}
