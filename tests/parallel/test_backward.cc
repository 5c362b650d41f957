// What backward() leaves behind under each strategy, on real processes. Under ddp and ddp-naive
// every rank's p.grad() is the average of the ranks' own gradients as soon as backward returns
// (checked against gradients each rank computes for every rank without communicating, averaged
// by hand), with or without no_sync() accumulation first; ZeRO and FSDP leave what their headers
// say. And a user's hooks outlive a strategy: wrapping adds the strategy's hooks, destroying it
// removes those and only those.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/hooks.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/make_data_parallel.h"
#include "tests/support/multiprocess.h"
#include "tensor/elementwise.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;
using namespace ringgrad::nn::parallel;
using namespace ringgrad::test;  // run_ranks, check, describe

namespace {

constexpr std::int64_t kPerRank = 3;

std::shared_ptr<Sequential> make_model() {
  manual_seed(5);
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(6, 9, true, DType::Float64), std::make_shared<ReLU>(),
      std::make_shared<Linear>(9, 3, true, DType::Float64)});
}

std::unique_ptr<Optimizer> sgd(std::vector<ParamGroup> groups) { return std::make_unique<SGD>(std::move(groups), 0.1); }

// Micro-batch `micro` of rank `rank`: kPerRank rows of features and their classes.
std::pair<Tensor, Tensor> batch(int micro, int rank) {
  Generator gen(300 + static_cast<std::uint64_t>(micro) * 16 + static_cast<std::uint64_t>(rank));
  Tensor x = Tensor::zeros({kPerRank, 6}, DType::Float64);
  kernels::normal_(x, 0.0, 1.0, gen);
  std::vector<std::int64_t> y;
  for (std::int64_t i = 0; i < kPerRank; ++i) y.push_back(static_cast<std::int64_t>(gen.next_below(3)));
  return {x, Tensor::from_vector(y, {kPerRank})};
}

Tensor loss_on(const std::function<Tensor(const Tensor&)>& forward, int micro, int rank) {
  auto [x, y] = batch(micro, rank);
  return cross_entropy(forward(x), y);
}

// The gradients one process computes for rank `rank`'s micro-batches [0, micros), summed, with no
// data parallelism anywhere: a fresh model, a plain backward.
std::vector<std::vector<double>> local_gradients(int rank, int micros) {
  auto model = make_model();
  for (int m = 0; m < micros; ++m) backward(loss_on([&](const Tensor& x) { return (*model)(x); }, m, rank));
  std::vector<std::vector<double>> grads;
  for (const Tensor& p : model->parameters()) grads.push_back(p.grad().to_vector<double>());
  return grads;
}

// The mean over ranks of local_gradients, averaged by hand.
std::vector<std::vector<double>> averaged_by_hand(int world, int micros) {
  std::vector<std::vector<double>> mean = local_gradients(0, micros);
  for (int r = 1; r < world; ++r) {
    const auto g = local_gradients(r, micros);
    for (std::size_t i = 0; i < mean.size(); ++i) {
      for (std::size_t j = 0; j < mean[i].size(); ++j) mean[i][j] += g[i][j];
    }
  }
  for (auto& v : mean) {
    for (double& e : v) e /= world;
  }
  return mean;
}

void check_grads(const Module& model, const std::vector<std::vector<double>>& want, const std::string& what) {
  const auto params = model.named_parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor g = params[i].second.grad();
    check(g.defined(), fmt::format("{}: {} has no gradient", what, params[i].first));
    const auto got = g.to_vector<double>();
    for (std::size_t j = 0; j < got.size(); ++j) {
      check(std::abs(got[j] - want[i][j]) <= 1e-12,
            fmt::format("{}: {}.grad[{}] = {}, expected {}", what, params[i].first, j, got[j], want[i][j]));
    }
  }
}

struct DdpCase {
  std::string strategy;
  double bucket_cap_mb;  // tiny: a bucket per parameter, so most buckets go through the worker
  bool overlap;
};

// One synchronised backward, then a step of k micro-batches (all but the last under no_sync()):
// after each, p.grad() must already be the average over ranks, before step() is called.
void check_ddp_averages(const DdpCase& c, const transport::Config& config) {
  collectives::Communicator comm(config);
  const int rank = comm.rank(), world = comm.world_size();
  auto model = make_model();
  DataParallelOptions options;
  options.bucket_cap_mb = c.bucket_cap_mb;
  options.overlap = c.overlap;
  auto dp = make_data_parallel(c.strategy, model, comm, {{model->parameters()}}, sgd, options);
  const std::string what = fmt::format("{} (buckets {} MiB, overlap {}) rank {} of {}", c.strategy, c.bucket_cap_mb,
                                       c.overlap, rank, world);
  auto forward = [&](const Tensor& x) { return dp->forward(x); };

  dp->zero_grad();
  dp->backward(loss_on(forward, 0, rank));
  check_grads(*model, averaged_by_hand(world, 1), what + ", one backward");

  // Gradient accumulation: the no_sync() backward leaves this rank's own gradient, the next
  // one averages the sum of both micro-batches.
  dp->zero_grad();
  {
    auto no_sync = dp->no_sync();
    dp->backward(loss_on(forward, 0, rank));
  }
  check_grads(*model, local_gradients(rank, 1), what + ", inside no_sync");
  dp->backward(loss_on(forward, 1, rank));
  check_grads(*model, averaged_by_hand(world, 2), what + ", after no_sync");
  dp->step();
}

}  // namespace

TEST_CASE("after backward under ddp and ddp-naive every rank's p.grad() is already the average") {
  const std::vector<DdpCase> cases{
      {"ddp", 25, true}, {"ddp", 1e-4, true}, {"ddp", 1e-4, false}, {"ddp-naive", 25, true}};
  for (const DdpCase& c : cases) {
    for (int world : {2, 3}) {
      auto results = run_ranks(world, [&](const transport::Config& config) { check_ddp_averages(c, config); });
      INFO(c.strategy << " buckets " << c.bucket_cap_mb << " overlap " << c.overlap << " world " << world << ": "
                      << describe(results));
      for (auto& r : results) REQUIRE(r.ok());
    }
  }
}

TEST_CASE("after backward under zero1 p.grad() is the rank's own gradient, under zero2 and fsdp none") {
  for (std::string strategy : {"zero1", "zero2", "fsdp"}) {
    auto results = run_ranks(2, [&](const transport::Config& config) {
      collectives::Communicator comm(config);
      auto model = make_model();
      auto dp = make_data_parallel(strategy, model, comm, {{model->parameters()}}, sgd);
      dp->zero_grad();
      dp->backward(loss_on([&](const Tensor& x) { return dp->forward(x); }, 0, comm.rank()));
      const std::string what = fmt::format("{} rank {}", strategy, comm.rank());
      if (strategy == "zero1") {
        check_grads(*model, local_gradients(comm.rank(), 1), what);
      } else {
        for (const auto& [name, p] : model->named_parameters()) {
          check(!p.grad().defined(), fmt::format("{}: {} still holds a full gradient", what, name));
        }
      }
      dp->step();
    });
    INFO(strategy << ": " << describe(results));
    for (auto& r : results) REQUIRE(r.ok());
  }
}

TEST_CASE("a user's hooks still fire after a strategy is wrapped around the model and destroyed") {
  for (std::string strategy : {"ddp-naive", "ddp", "zero1", "zero2", "fsdp"}) {
    auto results = run_ranks(2, [&](const transport::Config& config) {
      collectives::Communicator comm(config);
      auto model = make_model();
      Tensor w = model->parameters().front();
      auto hooks_on_w = [&] { return w.autograd_meta().post_accumulate_grad_hooks->size(); };
      int before = 0, during = 0, forwards = 0;
      autograd::RemovableHandle user = autograd::register_post_accumulate_grad_hook(w, [&](Tensor&) { ++before; });
      autograd::RemovableHandle user_forward =
          model->named_children().front().second->register_forward_pre_hook([&](Module&) { ++forwards; });
      const std::string what = fmt::format("{} rank {}", strategy, comm.rank());
      autograd::RemovableHandle user_while_wrapped;
      {
        auto dp = make_data_parallel(strategy, model, comm, {{model->parameters()}}, sgd);
        // ddp, zero2 and fsdp communicate from a hook of their own; ddp-naive and zero1 after backward.
        const std::size_t own = strategy == "ddp" || strategy == "zero2" || strategy == "fsdp" ? 1 : 0;
        check(hooks_on_w() == 1 + own, fmt::format("{}: wrapped, {} hooks on the parameter, not {}", what, hooks_on_w(), 1 + own));
        user_while_wrapped = autograd::register_post_accumulate_grad_hook(w, [&](Tensor&) { ++during; });
        dp->zero_grad();
        dp->backward(loss_on([&](const Tensor& x) { return dp->forward(x); }, 0, comm.rank()));
        dp->step();
        check(before == 1 && during == 1 && forwards == 1,
              fmt::format("{}: wrapped, the hooks ran {}, {} and {} times, not once each", what, before, during, forwards));
      }  // the strategy is destroyed: its hooks go, the user's stay
      check(hooks_on_w() == 2, fmt::format("{}: {} hooks left on the parameter, not the user's 2", what, hooks_on_w()));
      if (strategy == "fsdp") {
        // FSDP freed the full parameters and has no unwrap that gathers them back: give them
        // storage again (any values do) so that a plain forward can run.
        for (Tensor p : model->parameters()) {
          p.storage()->resize(static_cast<std::size_t>(p.numel()) * dtype_size(p.dtype()));
          kernels::fill_(p, 0.5);
        }
      }
      model->zero_grad();
      backward(loss_on([&](const Tensor& x) { return (*model)(x); }, 1, comm.rank()));  // no communication
      check(before == 2 && during == 2 && forwards == 2,
            fmt::format("{}: unwrapped, the hooks ran {}, {} and {} times, not twice each", what, before, during, forwards));
    });
    INFO(strategy << ": " << describe(results));
    for (auto& r : results) REQUIRE(r.ok());
  }
}
