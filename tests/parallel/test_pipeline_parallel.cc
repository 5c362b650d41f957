// Pipeline parallelism changes when and where each layer runs, not the result: with real
// processes, in float64, a GPT cut into 2 and 3 stages trains exactly what one process trains
// at the same batch, under both schedules (loss of every step, every stage's parameters after
// 3 AdamW steps, 1e-12); 1F1B holds at most S - s micro-batches' activations on stage s where
// AFAB holds all M; layers or micro-batches that do not divide are refused on every rank.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/optim.h"
#include "nn/parallel/model_parallel/pipeline_schedule.h"
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

constexpr double kTol = 1e-12;

GPTConfig small_config() { return ringgrad::test::small_gpt(6, 2, 8, 11); }


void pipeline_equals_one_process(int stages, int micro_batches, PipelineSchedule schedule) {
  const auto results = run_ranks(stages, [&](const transport::Config& config) {
    Communicator group(config, collectives::CommOptions{});
    manual_seed(3);
    GPT whole(small_config());
    PipelineStage stage(whole, group.rank(), stages);
    AdamW serial(weight_decay_groups(whole, 0.1), ringgrad::test::kTestAdam);
    AdamW mine(weight_decay_groups(stage, 0.1), ringgrad::test::kTestAdam);
    Generator gen(23);
    for (int step = 0; step < 3; ++step) {
      const auto [x, y] = ringgrad::test::random_batch(gen, 4, 11);
      const double expected_loss = ringgrad::test::one_process_step(whole, serial, x, y);
      stage.zero_grad();
      const PipelineStepResult r = pipeline_step(stage, group, x, y, micro_batches, schedule);
      mine.step();
      check(std::abs(r.loss - expected_loss) < kTol,
            fmt::format("stage {} step {}: loss {} vs one process {}", group.rank(), step, r.loss, expected_loss));
      const std::size_t held = schedule == PipelineSchedule::kAllForwardAllBackward
                                   ? static_cast<std::size_t>(micro_batches)
                                   : static_cast<std::size_t>(std::min(stages - group.rank(), micro_batches));
      check(r.peak_live_micro_batches == held, fmt::format("stage {}: held {} micro-batches at once, expected {}",
                                                           group.rank(), r.peak_live_micro_batches, held));
    }
    std::map<std::string, Tensor> expected;
    for (auto& [name, t] : whole.named_parameters()) expected[name] = t;
    for (auto& [name, t] : stage.named_parameters()) {
      const double d = max_abs_diff(t, expected.at(name));
      check(d < kTol, fmt::format("stage {}: {} differs from one process's by {}", group.rank(), name, d));
    }
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

TEST_CASE("pipeline parallel GPT: 2 stages, AFAB and 1F1B, 4 micro-batches, train what one process trains") {
  pipeline_equals_one_process(2, 4, PipelineSchedule::kAllForwardAllBackward);
  pipeline_equals_one_process(2, 4, PipelineSchedule::kOneForwardOneBackward);
}

TEST_CASE("pipeline parallel GPT: 3 stages, AFAB and 1F1B, 2 and 4 micro-batches, train what one process trains") {
  for (int m : {2, 4}) {
    pipeline_equals_one_process(3, m, PipelineSchedule::kAllForwardAllBackward);
    pipeline_equals_one_process(3, m, PipelineSchedule::kOneForwardOneBackward);
  }
}

TEST_CASE("pipeline: layers or micro-batches that do not divide are refused on every rank, naming the numbers") {
  const auto results = run_ranks(2, [](const transport::Config& config) {
    Communicator group(config, collectives::CommOptions{});
    GPTConfig c = small_config();
    c.n_layer = 5;
    std::string e;
    try {
      PipelineStage(GPT(c), group.rank(), 2);
    } catch (const std::invalid_argument& error) {
      e = error.what();
    }
    check(e.find("n_layer 5 does not divide into 2 stages") != std::string::npos, e);
    GPT whole(small_config());
    PipelineStage stage(whole, group.rank(), 2);
    const Tensor x = Tensor::zeros({4, 8}, DType::Int64);
    e.clear();
    try {
      pipeline_step(stage, group, x, x, 3, PipelineSchedule::kOneForwardOneBackward);
    } catch (const std::invalid_argument& error) {
      e = error.what();
    }
    check(e.find("3 micro-batches do not divide a batch of 4") != std::string::npos, e);
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}
