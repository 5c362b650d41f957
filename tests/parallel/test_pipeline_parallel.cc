// Pipeline parallelism changes when and where each layer runs, not the result: with real
// processes, in float64, a GPT cut into 2 and 3 stages trains exactly what one process trains
// at the same batch, under every schedule (loss of every step, every stage's parameters after
// 3 AdamW steps, 1e-12): AFAB, 1F1B, ZB-H1 (2 and 4 stages), interleaved 1F1B (2 stages of 2
// virtual stages over a 4-layer model, M = S and M = 2 S). 1F1B holds at most S - s
// micro-batches' activations on stage s where AFAB holds all M, ZB-H1 S on every stage,
// interleaved stage s min(2 (S-s-1) + (V-1) S + 1, M V) chunk activations. Layers, virtual
// stages or micro-batches that do not divide are refused on every rank, naming the numbers.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

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

GPTConfig small_config(std::int64_t layers = 6) { return ringgrad::test::small_gpt(layers, 2, 8, 11); }

// The most micro-batches (interleaved: micro-batch chunks) whose activations stage s holds at once.
std::size_t expected_held(PipelineSchedule schedule, int s, int stages, int chunks, int m) {
  switch (schedule) {
    case PipelineSchedule::kAllForwardAllBackward: return static_cast<std::size_t>(m);
    case PipelineSchedule::kOneForwardOneBackward: return static_cast<std::size_t>(std::min(stages - s, m));
    case PipelineSchedule::kZeroBubbleH1: return static_cast<std::size_t>(std::min(stages, m));
    case PipelineSchedule::kInterleaved1F1B: {
      const int total = m * chunks;
      return static_cast<std::size_t>(m == stages ? total : std::min(2 * (stages - s - 1) + (chunks - 1) * stages + 1, total));
    }
  }
  return 0;
}

void pipeline_equals_one_process(int stages, int micro_batches, PipelineSchedule schedule, std::int64_t layers = 6,
                                 int chunks = 1) {
  const auto results = run_ranks(stages, [&](const transport::Config& config) {
    Communicator group(config, collectives::CommOptions{});
    manual_seed(3);
    GPT whole(small_config(layers));
    PipelineStage stage(whole, group.rank(), stages, nullptr, nullptr, false, chunks);
    AdamW serial(weight_decay_groups(whole, 0.1), ringgrad::test::kTestAdam);
    AdamW mine(weight_decay_groups(stage, 0.1), ringgrad::test::kTestAdam);
    Generator gen(23);
    for (int step = 0; step < 3; ++step) {
      const auto [x, y] = ringgrad::test::random_batch(gen, std::max(4, micro_batches), 11);
      const double expected_loss = ringgrad::test::one_process_step(whole, serial, x, y);
      stage.zero_grad();
      const PipelineStepResult r = pipeline_step(stage, group, x, y, micro_batches, schedule);
      mine.step();
      check(std::abs(r.loss - expected_loss) < kTol,
            fmt::format("stage {} step {}: loss {} vs one process {}", group.rank(), step, r.loss, expected_loss));
      const std::size_t held = expected_held(schedule, group.rank(), stages, chunks, micro_batches);
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

TEST_CASE("pipeline parallel GPT: ZB-H1 (B and W split) on 2 and 4 stages, 2 to 8 micro-batches, trains what one process trains") {
  for (int m : {2, 4, 8}) pipeline_equals_one_process(2, m, PipelineSchedule::kZeroBubbleH1);
  for (int m : {2, 4, 8}) pipeline_equals_one_process(4, m, PipelineSchedule::kZeroBubbleH1, 4);
}

TEST_CASE("pipeline parallel GPT: interleaved 1F1B, 2 stages x 2 virtual stages of a 4-layer model, trains what one process trains") {
  for (int m : {2, 4, 6}) pipeline_equals_one_process(2, m, PipelineSchedule::kInterleaved1F1B, 4, 2);
  pipeline_equals_one_process(2, 4, PipelineSchedule::kInterleaved1F1B, 8, 2);
  pipeline_equals_one_process(4, 8, PipelineSchedule::kInterleaved1F1B, 8, 2);
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
    // Interleaved: virtual stages that do not divide the layers, micro-batches not a multiple of
    // the stages, a schedule that does not match the stage's chunks.
    e.clear();
    try {
      PipelineStage(GPT(small_config(6)), group.rank(), 2, nullptr, nullptr, false, 2);
    } catch (const std::invalid_argument& error) {
      e = error.what();
    }
    check(e.find("n_layer 6 does not divide into 2 stages x 2 virtual stages = 4 model chunks") != std::string::npos, e);
    GPT four(small_config(4));
    PipelineStage chunked(four, group.rank(), 2, nullptr, nullptr, false, 2);
    const Tensor x6 = Tensor::zeros({6, 8}, DType::Int64);
    for (auto [schedule, stage_of, micro, expected] :
         {std::tuple{PipelineSchedule::kInterleaved1F1B, &chunked, 3,
                     "interleaved 1F1B needs the micro-batches to be a multiple of the 2 stages (Megatron-LM's rule), got 3"},
          std::tuple{PipelineSchedule::kOneForwardOneBackward, &chunked, 2, "the stage holds 2 model chunks"},
          std::tuple{PipelineSchedule::kInterleaved1F1B, &stage, 2, "the stage holds 1 model chunk;"}}) {
      e.clear();
      try {
        pipeline_step(*stage_of, group, x6, x6, micro, schedule);
      } catch (const std::invalid_argument& error) {
        e = error.what();
      }
      check(e.find(expected) != std::string::npos, e);
    }
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}
