// Data parallelism changes where the work happens, not the result: N ranks at per-rank batch b
// must end with the same parameters as one process at batch N*b, for every strategy. Each
// rank also trains the one-process reference itself (no communication), and compares.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/make_data_parallel.h"
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

constexpr std::int64_t kFeatures = 6, kHidden = 9, kClasses = 3;

std::shared_ptr<Sequential> make_model(DType dtype) {
  manual_seed(11);
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(kFeatures, kHidden, true, dtype), std::make_shared<ReLU>(),
      std::make_shared<Linear>(kHidden, kClasses, true, dtype)});
}

// Decay for matrices, none for biases: two groups, as GPT training uses.
std::vector<ParamGroup> groups_of(Module& model) {
  std::vector<ParamGroup> groups{{{}, 0.1}, {{}, 0.0}};
  for (const Tensor& p : model.parameters()) groups[p.dim() == 2 ? 0 : 1].params.push_back(p);
  return groups;
}

std::unique_ptr<Optimizer> adamw(std::vector<ParamGroup> groups) {
  return std::make_unique<AdamW>(std::move(groups), AdamOptions{0.05, 0.9, 0.99, 1e-8});
}

// The global batch of step `step`: rows of features and their classes.
std::pair<Tensor, Tensor> global_batch(int step, std::int64_t rows, DType dtype) {
  Generator gen(100 + static_cast<std::uint64_t>(step));
  Tensor x = Tensor::zeros({rows, kFeatures}, dtype);
  kernels::normal_(x, 0.0, 1.0, gen);
  std::vector<std::int64_t> y;
  for (std::int64_t i = 0; i < rows; ++i) y.push_back(static_cast<std::int64_t>(gen.next_below(kClasses)));
  return {x, Tensor::from_vector(y, {rows})};
}

// Rows [rank * b, (rank + 1) * b) of a global batch.
Tensor rows_of(const Tensor& t, int rank, std::int64_t b) { return kernels::contiguous(kernels::narrow(t, 0, rank * b, b)); }

struct Setup {
  std::string strategy;
  DType dtype;
  int world;
  std::int64_t per_rank = 4;
  int steps = 3;
  int accumulation = 1;     // micro-batches per step; all but the last under no_sync()
  double max_norm = 0.5;    // global gradient clipping, which sharded strategies must all-reduce
};

// One process, whole batch, plain optimizer: what every strategy must reproduce.
std::vector<Tensor> reference_parameters(const Setup& s) {
  auto model = make_model(s.dtype);
  auto opt = adamw(groups_of(*model));
  const std::int64_t micro = s.per_rank * s.world;
  for (int step = 0; step < s.steps; ++step) {
    auto [x, y] = global_batch(step, micro * s.accumulation, s.dtype);
    opt->zero_grad();
    for (int m = 0; m < s.accumulation; ++m) {
      backward(cross_entropy((*model)(rows_of(x, m, micro)), rows_of(y, m, micro)) * (1.0 / s.accumulation));
    }
    clip_grad_norm_(model->parameters(), s.max_norm);
    opt->step();
  }
  return model->parameters();
}

void train_distributed(const Setup& s, const transport::Config& config) {
  collectives::Communicator comm(config);
  auto model = make_model(s.dtype);
  auto dp = make_data_parallel(s.strategy, model, comm, groups_of(*model), adamw);
  const std::int64_t micro = s.per_rank * s.world;
  for (int step = 0; step < s.steps; ++step) {
    auto [x, y] = global_batch(step, micro * s.accumulation, s.dtype);
    dp->zero_grad();
    for (int m = 0; m < s.accumulation; ++m) {
      // Micro-batch m of the step; this rank's rows of it.
      const Tensor mx = rows_of(rows_of(x, m, micro), comm.rank(), s.per_rank);
      const Tensor my = rows_of(rows_of(y, m, micro), comm.rank(), s.per_rank);
      const Tensor loss = cross_entropy(dp->forward(mx), my) * (1.0 / s.accumulation);
      if (m + 1 < s.accumulation) {
        auto no_sync = dp->no_sync();
        dp->backward(loss);
      } else {
        dp->backward(loss);
      }
    }
    dp->step(s.max_norm);
  }
  // Compare the full parameters (gathered for sharded strategies) with the reference.
  const StateDict full = full_state_dict(*dp);
  if (comm.rank() != 0) return;
  const std::vector<Tensor> expected = reference_parameters(s);
  const double tolerance = s.dtype == DType::Float64 ? 1e-10 : 1e-5;
  const auto names = model->named_parameters();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto got = full.at(names[i].first).to_vector<double>();
    const auto want = expected[i].to_vector<double>();
    for (std::size_t j = 0; j < got.size(); ++j) {
      check(std::abs(got[j] - want[j]) <= tolerance,
            fmt::format("{} {} world {}: {}[{}] = {} vs one process {}", s.strategy, dtype_name(s.dtype), s.world,
                        names[i].first, j, got[j], want[j]));
    }
  }
}

const std::vector<std::string> kStrategies{"ddp-naive", "ddp", "zero1", "zero2", "fsdp"};

}  // namespace

TEST_CASE("every strategy on N ranks equals one process at N times the batch (float64, 1e-10)") {
  for (const auto& strategy : kStrategies) {
    for (int world : {2, 3}) {
      Setup s{strategy, DType::Float64, world};
      auto results = run_ranks(world, [&](const transport::Config& c) { train_distributed(s, c); });
      INFO(strategy << " world " << world << ": " << describe(results));
      for (auto& r : results) REQUIRE(r.ok());
    }
  }
}

TEST_CASE("every strategy in float32 agrees within 1e-5") {
  for (const auto& strategy : kStrategies) {
    Setup s{strategy, DType::Float32, 2};
    auto results = run_ranks(2, [&](const transport::Config& c) { train_distributed(s, c); });
    INFO(strategy << ": " << describe(results));
    for (auto& r : results) REQUIRE(r.ok());
  }
}

TEST_CASE("no_sync gradient accumulation equals the larger batch") {
  for (const auto& strategy : kStrategies) {
    Setup s{strategy, DType::Float64, 2};
    s.accumulation = 3;
    auto results = run_ranks(2, [&](const transport::Config& c) { train_distributed(s, c); });
    INFO(strategy << ": " << describe(results));
    for (auto& r : results) REQUIRE(r.ok());
  }
}
