// Uneven inputs on real processes (nn/parallel/data_parallel/uneven_inputs.h): 2 and 3 ranks whose batch
// counts differ by 1 and by 3 finish without a hang under ddp, zero2 and fsdp, and the model
// they end with is the one a single process trains when each step's gradient is the mean over
// the batches the ranks actually had (float64, 1e-12); with kThrow the first uneven step ends
// with the same error on every rank, naming who ran out.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/make_data_parallel.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/data_parallel/uneven_inputs.h"
#include "tests/support/multiprocess.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;
using namespace ringgrad::nn::parallel;
using namespace ringgrad::test;  // run_ranks, check, describe

namespace {

std::shared_ptr<Sequential> make_model() {
  manual_seed(8);
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(6, 9, true, DType::Float64), std::make_shared<ReLU>(),
      std::make_shared<Linear>(9, 3, true, DType::Float64)});
}

std::unique_ptr<Optimizer> sgd(std::vector<ParamGroup> groups) {
  return std::make_unique<SGD>(std::move(groups), 0.1, 0.9);
}

// Batch i of rank r: 4 rows of features and classes, the same wherever it is made.
std::pair<Tensor, Tensor> batch(int rank, int i) {
  Generator gen(500 + static_cast<std::uint64_t>(rank) * 64 + static_cast<std::uint64_t>(i));
  Tensor x = Tensor::zeros({4, 6}, DType::Float64);
  kernels::normal_(x, 0.0, 1.0, gen);
  std::vector<std::int64_t> y;
  for (int k = 0; k < 4; ++k) y.push_back(static_cast<std::int64_t>(gen.next_below(3)));
  return {x, Tensor::from_vector(y, {4})};
}

// One process: step s averages the losses of the ranks that still have a batch s.
std::map<std::string, std::vector<double>> reference(const std::vector<int>& counts) {
  auto model = make_model();
  auto opt = sgd({{model->parameters()}});
  for (int s = 0; s < *std::max_element(counts.begin(), counts.end()); ++s) {
    Tensor total;
    int active = 0;
    for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
      if (s >= counts[static_cast<std::size_t>(r)]) continue;
      auto [x, y] = batch(r, s);
      const Tensor loss = cross_entropy((*model)(x), y);
      total = total.defined() ? total + loss : loss;
      ++active;
    }
    model->zero_grad();
    backward(total * (1.0 / active));
    opt->step();
  }
  std::map<std::string, std::vector<double>> out;
  for (auto& [name, p] : model->named_parameters()) out[name] = kernels::contiguous(p.detach()).to_vector<double>();
  return out;
}

void uneven_equals_reference(const std::string& strategy, const std::vector<int>& counts) {
  const auto results = run_ranks(static_cast<int>(counts.size()), [&](const transport::Config& config) {
    collectives::Communicator comm(config, collectives::CommOptions{});
    auto model = make_model();
    auto dp = make_data_parallel(strategy, model, comm, {{model->parameters()}}, sgd);
    UnevenInputs uneven(*dp);
    const int mine = counts[static_cast<std::size_t>(comm.rank())];
    int i = 0;
    while (uneven.begin_step(i < mine)) {
      auto [x, y] = batch(comm.rank(), std::min(i, mine - 1));  // out of batches: the last one again, zeroed
      dp->zero_grad();
      uneven.backward(cross_entropy(dp->forward(x), y));
      uneven.step();
      ++i;
    }
    check(uneven.batches_seen() == mine, fmt::format("rank {} trained on {} batches, had {}", comm.rank(),
                                                     uneven.batches_seen(), mine));
    const auto want = reference(counts);
    const StateDict full = full_state_dict(*dp);  // the whole parameters on rank 0, whatever the strategy shards
    if (comm.rank() != 0) return;
    for (auto& [name, values] : want) {
      const auto got = kernels::contiguous(full.at(name)).to_vector<double>();
      double d = 0;
      for (std::size_t j = 0; j < got.size(); ++j) d = std::max(d, std::abs(got[j] - values[j]));
      check(d < 1e-12, fmt::format("{} differs from the reference by {}", name, d));
    }
  });
  INFO(fmt::format("{} with batch counts {}: {}", strategy, fmt::join(counts, ", "), describe(results)));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

TEST_CASE("uneven inputs: 2 and 3 ranks with counts differing by 1 and by 3 train on the batches they had") {
  for (const char* strategy : {"ddp", "zero2", "fsdp"}) {
    uneven_equals_reference(strategy, {4, 3});
    uneven_equals_reference(strategy, {2, 5});
    uneven_equals_reference(strategy, {3, 4, 4});
    uneven_equals_reference(strategy, {5, 2, 5});
  }
}

TEST_CASE("uneven inputs with kThrow: every rank stops at the first uneven step, naming who ran out") {
  const auto results = run_ranks(3, [](const transport::Config& config) {
    collectives::Communicator comm(config, collectives::CommOptions{});
    auto model = make_model();
    auto dp = make_data_parallel("ddp", model, comm, {{model->parameters()}}, sgd);
    UnevenInputs uneven(*dp, UnevenInputs::Mode::kThrow);
    const int mine = comm.rank() == 2 ? 1 : 3;
    std::string error;
    try {
      for (int i = 0; uneven.begin_step(i < mine); ++i) {
        auto [x, y] = batch(comm.rank(), i);
        dp->zero_grad();
        uneven.backward(cross_entropy(dp->forward(x), y));
        uneven.step();
      }
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    check(error.find("ranks 0, 1 have a batch for step 1, rank 2 ran out (batches trained so far by rank: 1, 1, 1)") !=
              std::string::npos,
          fmt::format("rank {}: '{}'", comm.rank(), error));
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}
