// Data, pipeline, context and tensor parallelism composed on one grid of real processes: for
// dp 2 x tp 2, dp 2 x pp 2, pp 2 x tp 2, cp 2, cp 2 x tp 2, dp 2 x cp 2 and pp 2 x cp 2 (DDP
// inside the dp groups), and dp 2 x tp 2 and dp 2 x pp 2 under ZeRO-1, ZeRO-2 and FSDP, 3 AdamW
// steps on a global batch leave the loss and every rank's piece of every parameter, and the
// gradient norm clipping would use, equal to one process on that batch (float64, 1e-12);
// with evaluation and accumulation on (pp 2 x tp 2, dp 2 x cp 2, pp 2 x cp 2, cp 2 x tp 2 with
// sequence parallelism, dp 2 x pp 2 under FSDP), the evaluation losses (grid_loss, also of a
// length the cp split cannot cut) and the last stage's logits (grid_logits) before each step
// equal one process's too (1e-12), and each step runs 2 micro-batches x 2 accumulation steps;
// rotary embeddings, QK-norm and ReLU^2 train as one process under tp 2, dp 2 x pp 2,
// pp 2 x tp 2 (sp), cp 2 and cp 2 x tp 2 (each cp rank's positions turned by their index in
// the whole sequence), evaluation on (1e-12);
// Muon + AdamW (Muon's updates of the tp-split matrices gathered and orthogonalised whole, its
// work shared over dp) trains as one process under tp 2, pp 2, dp 2 x tp 2, dp 2 x pp 2 and
// cp 2 x tp 2 (sp) (1e-12); a grid that does not cover the world is refused on every rank,
// naming the numbers.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "autograd/grad_mode.h"
#include "nn/parallel/grid/grid_inference.h"
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
using ringgrad::test::expected_piece;
using ringgrad::test::max_abs_diff;
using ringgrad::test::run_ranks;

namespace {

// What the grid evaluates equals one process: the loss of a batch of 8 positions, and of its first
// 5 (a length cp 2 cannot cut: through the gathered logits), and the whole logits of those 5 on
// the last stage (undefined elsewhere), which sampling draws from.
void check_evaluation(GPT& whole, PipelineStage& stage, GridGroups& groups, Generator& gen, int rank, int step) {
  const auto [x, y] = ringgrad::test::random_batch(gen, 8, 13);
  const Tensor x5 = kernels::contiguous(kernels::narrow(x, 1, 0, 5)), y5 = kernels::contiguous(kernels::narrow(y, 1, 0, 5));
  for (const auto& [xs, ys] : {std::pair{x, y}, std::pair{x5, y5}}) {
    const double got = grid_loss(stage, groups, xs, ys), expected = batch_loss(whole)(xs, ys);
    check(std::abs(got - expected) < 1e-12, fmt::format("rank {} step {}: evaluation loss of {} positions {} vs one "
                                                        "process {}", rank, step, xs.size(1), got, expected));
  }
  const Tensor logits = grid_logits(stage, groups, x5);
  if (!stage.is_last()) return check(!logits.defined(), fmt::format("rank {}: logits off the last stage", rank));
  NoGradGuard no_grad;
  const double d = max_abs_diff(logits, whole(x5));
  check(d < 1e-12, fmt::format("rank {} step {}: the last stage's logits differ from one process's by {}", rank, step, d));
}

// A run on the grid: its layout, the strategy inside the dp groups, the model, what it checks.
struct Run {
  int dp = 1, pp = 1, tp = 1, cp = 1;
  bool sp = false;
  PipelineSchedule schedule = PipelineSchedule::kOneForwardOneBackward;
  int virtual_stages = 1;    // model chunks per stage (interleaved)
  bool tied = true;
  std::string strategy = "ddp";
  int accumulation = 1;      // steps of 2 micro-batches each
  bool evaluate = false;     // check_evaluation before each step
  bool rotary = false, qk_norm = false, relu_squared = false;
  bool muon = false;         // Muon on the blocks' matrices, AdamW on the rest (ddp, ddp-naive)
};

void grid_equals_one_process(const Run& run) {
  const int dp = run.dp, pp = run.pp, tp = run.tp, cp = run.cp;
  const auto results = run_ranks(dp * pp * tp * cp, [&](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    GridGroups groups = GridGroups::make(world, dp, pp, tp, cp);
    manual_seed(21);
    GPTConfig model = ringgrad::test::small_gpt(4, 4, 16, 13, run.tied);
    model.rotary = run.rotary, model.qk_norm = run.qk_norm, model.relu_squared = run.relu_squared;
    GPT whole(model);
    auto stage = make_stage(whole, groups, run.sp, run.virtual_stages);
    auto mine = run.muon ? ringgrad::test::grid_muon_strategy(run.strategy, stage, groups)
                         : ringgrad::test::grid_strategy(run.strategy, stage, groups);
    std::unique_ptr<Optimizer> serial;
    if (run.muon) serial = ringgrad::test::one_process_muon(whole);
    else serial = std::make_unique<AdamW>(weight_decay_groups(whole, 0.1), ringgrad::test::kTestAdam);
    Generator gen(31);
    for (int step = 0; step < 3; ++step) {
      if (run.evaluate) check_evaluation(whole, dynamic_cast<PipelineStage&>(mine->module()), groups, gen, world.rank(), step);
      const auto [x, y] = ringgrad::test::random_batch(gen, 8, 13);
      const double expected_loss = ringgrad::test::one_process_step(whole, *serial, x, y);
      mine->zero_grad();
      const double got = grid_step(*mine, groups, x, y, 2 * run.accumulation, run.schedule).loss;  // train_gpt's accumulation
      const double norm = mine->step(1e9);  // a bound never reached: the norm, no clipping
      const double whole_norm = std::sqrt(grad_norm_squared(whole.parameters()));
      check(std::abs(norm - whole_norm) < 1e-12,
            fmt::format("rank {} step {}: gradient norm {} vs one process {}", world.rank(), step, norm, whole_norm));
      check(std::abs(got - expected_loss) < 1e-12,
            fmt::format("rank {} step {}: loss {} vs one process {}", world.rank(), step, got, expected_loss));
    }
    std::map<std::string, Tensor> expected;
    for (auto& [name, t] : whole.named_parameters()) expected[name] = t;
    for (auto& [name, t] : full_state_dict(*mine)) {  // this stage's whole tensors, on dp rank 0
      if (name.starts_with("optimizer.")) continue;
      const double d = max_abs_diff(t, tp > 1 ? expected_piece(name, expected.at(name), *groups.tp) : expected.at(name).detach());
      check(d < 1e-12, fmt::format("rank {}: {} differs from one process's by {}", world.rank(), name, d));
    }
  });
  INFO(fmt::format("dp {} x pp {} x cp {} x tp {}{}, {}, {}{}{}{}{}{}: {}", dp, pp, cp, tp, run.sp ? " (sp)" : "",
                   run.tied ? "tied" : "untied", run.strategy, run.muon ? ", Muon" : "", run.evaluate ? ", evaluated" : "",
                   run.accumulation > 1 ? fmt::format(", {} accumulation steps", run.accumulation) : "",
                   run.rotary ? ", rotary" : "", run.qk_norm || run.relu_squared ? ", QK-norm, ReLU^2" : "", describe(results)));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

TEST_CASE("grid: dp 2 x tp 2 on 4 ranks trains what one process trains") {
  grid_equals_one_process({.dp = 2, .tp = 2});
}

TEST_CASE("grid: dp 2 x pp 2 on 4 ranks trains what one process trains (1F1B)") {
  grid_equals_one_process({.dp = 2, .pp = 2});
}

TEST_CASE("grid: pp 2 x tp 2 on 4 ranks trains what one process trains (AFAB and 1F1B)") {
  grid_equals_one_process({.pp = 2, .tp = 2, .schedule = PipelineSchedule::kAllForwardAllBackward});
  grid_equals_one_process({.pp = 2, .tp = 2});
}

TEST_CASE("grid: interleaved 1F1B (2 virtual stages) and ZB-H1 under pp 2 x tp 2 with evaluation, and dp 2 x pp 2 (DDP, ZeRO-1, FSDP), train what one process trains") {
  for (int accumulation : {1, 2}) {
    grid_equals_one_process({.pp = 2, .tp = 2, .schedule = PipelineSchedule::kInterleaved1F1B, .virtual_stages = 2,
                             .accumulation = accumulation, .evaluate = true});
    grid_equals_one_process({.pp = 2, .tp = 2, .schedule = PipelineSchedule::kZeroBubbleH1,
                             .accumulation = accumulation, .evaluate = true});
  }
  grid_equals_one_process({.dp = 2, .pp = 2, .schedule = PipelineSchedule::kInterleaved1F1B, .virtual_stages = 2});
  grid_equals_one_process({.dp = 2, .pp = 2, .schedule = PipelineSchedule::kZeroBubbleH1});
  for (const char* strategy : {"zero1", "fsdp"}) {
    grid_equals_one_process({.dp = 2, .pp = 2, .schedule = PipelineSchedule::kInterleaved1F1B, .virtual_stages = 2,
                             .strategy = strategy});
    grid_equals_one_process({.dp = 2, .pp = 2, .schedule = PipelineSchedule::kZeroBubbleH1, .strategy = strategy});
  }
}

TEST_CASE("grid: an untied lm_head (train_gpt's presets) under pp 2 x tp 2 and dp 2 x pp 2 trains what one process trains") {
  grid_equals_one_process({.pp = 2, .tp = 2, .tied = false});
  grid_equals_one_process({.dp = 2, .pp = 2, .schedule = PipelineSchedule::kAllForwardAllBackward, .tied = false});
}

TEST_CASE("grid: context parallel (ring attention) cp 2 alone, cp 2 x tp 2 and dp 2 x cp 2 train what one process trains") {
  grid_equals_one_process({.cp = 2});
  grid_equals_one_process({.tp = 2, .cp = 2, .tied = false});
  grid_equals_one_process({.dp = 2, .cp = 2});
}

TEST_CASE("grid: pp 2 x cp 2 on 4 ranks trains what one process trains") {
  grid_equals_one_process({.pp = 2, .cp = 2});
}

TEST_CASE("grid: sequence parallel inside tp 2, pp 2 x tp 2 and cp 2 x tp 2 trains what one process trains") {
  grid_equals_one_process({.tp = 2, .sp = true});
  grid_equals_one_process({.pp = 2, .tp = 2, .sp = true, .tied = false});
  grid_equals_one_process({.tp = 2, .cp = 2, .sp = true, .tied = false});
}

TEST_CASE("grid: ZeRO-1, ZeRO-2 and FSDP inside the dp groups of dp 2 x tp 2 and dp 2 x pp 2 train what one process trains") {
  for (const char* strategy : {"zero1", "zero2", "fsdp"}) {
    grid_equals_one_process({.dp = 2, .tp = 2, .strategy = strategy});
    grid_equals_one_process(
        {.dp = 2, .pp = 2, .schedule = PipelineSchedule::kAllForwardAllBackward, .tied = false, .strategy = strategy});
  }
  grid_equals_one_process({.dp = 2, .cp = 2, .strategy = "ddp-naive"});
}

TEST_CASE("grid: evaluation (loss and logits) and accumulation under pp 2 x tp 2, dp 2 x cp 2, pp 2 x cp 2, cp 2 x tp 2 (sp) and dp 2 x pp 2 (fsdp) as one process") {
  grid_equals_one_process({.pp = 2, .tp = 2, .tied = false, .accumulation = 2, .evaluate = true});
  grid_equals_one_process({.dp = 2, .cp = 2, .accumulation = 2, .evaluate = true});
  grid_equals_one_process({.pp = 2, .cp = 2, .accumulation = 2, .evaluate = true});
  grid_equals_one_process({.tp = 2, .cp = 2, .sp = true, .tied = false, .accumulation = 2, .evaluate = true});
  grid_equals_one_process({.dp = 2, .pp = 2, .schedule = PipelineSchedule::kAllForwardAllBackward, .tied = false,
                           .strategy = "fsdp", .accumulation = 2, .evaluate = true});
}

TEST_CASE("grid: rotary embeddings, QK-norm and ReLU^2 under tp 2, dp 2 x pp 2, pp 2 x tp 2 (sp), cp 2 and cp 2 x tp 2, as one process") {
  grid_equals_one_process({.tp = 2, .tied = false, .evaluate = true, .rotary = true, .qk_norm = true, .relu_squared = true});
  grid_equals_one_process({.dp = 2, .pp = 2, .evaluate = true, .rotary = true, .qk_norm = true, .relu_squared = true});
  grid_equals_one_process({.pp = 2, .tp = 2, .sp = true, .tied = false, .evaluate = true, .rotary = true,
                           .qk_norm = true, .relu_squared = true});
  grid_equals_one_process({.cp = 2, .evaluate = true, .rotary = true});
  grid_equals_one_process({.tp = 2, .cp = 2, .evaluate = true, .rotary = true, .qk_norm = true, .relu_squared = true});
}

TEST_CASE("grid: Muon (each split matrix gathered over tp, orthogonalised whole) under tp 2, pp 2, dp 2 x tp 2, dp 2 x pp 2 and cp 2 x tp 2 (sp), as one process") {
  grid_equals_one_process({.tp = 2, .tied = false, .muon = true});
  grid_equals_one_process({.pp = 2, .muon = true});
  grid_equals_one_process({.dp = 2, .tp = 2, .muon = true});
  grid_equals_one_process({.dp = 2, .pp = 2, .strategy = "ddp-naive", .muon = true});
  grid_equals_one_process({.tp = 2, .cp = 2, .sp = true, .tied = false, .muon = true});
}

TEST_CASE("grid: a layout that does not cover the world is refused on every rank, naming the numbers") {
  const auto results = run_ranks(4, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    std::string e;
    try {
      GridGroups::make(world, 2, 2, 2);
    } catch (const std::invalid_argument& error) {
      e = error.what();
    }
    check(e.find("dp 2 x pp 2 x cp 1 x tp 2 = 8 ranks, but the world has 4") != std::string::npos, e);
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}
