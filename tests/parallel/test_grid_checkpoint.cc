// Checkpoints across layouts and data-parallel strategies, with 4 real processes in float64: a
// run saved under dp 2 x tp 2 (ZeRO-1's or FSDP's shards inside dp) after 2 AdamW steps resumes
// on one process, under pp 2 (x dp 2) and under pp 2 x tp 2, with another strategy, with the next
// step's loss and the parameters after it equal to one process's uninterrupted run (1e-12); the
// file holds the vocabulary it was given, byte for byte. With Muon + AdamW (Muon's momentum on the
// blocks' matrices, AdamW's moments on the rest), saved under dp 2 x tp 2 and pp 2 x tp 2, the
// same holds.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/grid/grid_checkpoint.h"
#include "nn/safetensors.h"
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
using ringgrad::test::grid_strategy;
using ringgrad::test::max_abs_diff;
using ringgrad::test::run_ranks;

namespace {

constexpr double kDecay = 0.1;
const AdamOptions& kAdam = ringgrad::test::kTestAdam;

GPTConfig config() { return ringgrad::test::small_gpt(2, 2, 8, 11, /*tied=*/false); }
const std::string kVocab = "\n \"'\\AZaz\x80\xff";  // 11 ids' bytes, some a JSON string must escape

// Batch `i` of the run, the same on every rank.
std::pair<Tensor, Tensor> batch(int i) {
  Generator gen(100 + static_cast<std::uint64_t>(i));
  return ringgrad::test::random_batch(gen, 4, 11);
}

// The strategy `name` around `stage`, with AdamW, or with `muon` Muon + AdamW.
std::unique_ptr<DataParallel> strategy_of(const std::string& name, std::shared_ptr<PipelineStage> stage, GridGroups& g,
                                          bool muon) {
  return muon ? ringgrad::test::grid_muon_strategy(name, std::move(stage), g) : grid_strategy(name, std::move(stage), g);
}

// Saved after 2 steps under `saved_on` (dp, pp, tp) with the strategy `saved_by`, resumed with `resumed_by`.
void save_and_resume(const std::string& saved_by, const std::string& resumed_by, bool muon = false,
                     std::tuple<int, int, int> saved_on = {2, 1, 2}) {
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("grid_ckpt_{}.safetensors", ::getpid())).string();
  const auto results = run_ranks(4, [&](const transport::Config& cfg) {
    Communicator world(cfg, collectives::CommOptions{});
    // The reference: one process, 3 steps; the loss of step 2 and the parameters after it.
    manual_seed(5);
    GPT one(config());
    std::unique_ptr<Optimizer> one_opt;
    if (muon) one_opt = ringgrad::test::one_process_muon(one);
    else one_opt = std::make_unique<AdamW>(weight_decay_groups(one, kDecay), kAdam);
    double third_loss = 0;
    for (int i = 0; i < 3; ++i) {
      auto [x, y] = batch(i);
      third_loss = ringgrad::test::one_process_step(one, *one_opt, x, y);
    }
    std::map<std::string, Tensor> after;
    for (auto& [name, t] : one.named_parameters()) after[name] = t;
    {  // Train 2 steps on the saving layout and save.
      GridGroups g = GridGroups::make(world, std::get<0>(saved_on), std::get<1>(saved_on), std::get<2>(saved_on));
      manual_seed(5);
      auto dp = strategy_of(saved_by, make_stage(GPT(config()), g), g, muon);
      for (int i = 0; i < 2; ++i) {
        auto [x, y] = batch(i);
        dp->zero_grad();
        grid_step(*dp, g, x, y, 1, PipelineSchedule::kOneForwardOneBackward);
        dp->step();
      }
      save_grid_checkpoint(path, *dp, g, world, config(), kVocab, TrainState{2, Generator(1), Generator(2)});
    }
    check(checkpoint_vocab(load_safetensors(path).metadata, path) == kVocab,
          fmt::format("rank {}: the checkpoint's vocabulary is not the one saved", world.rank()));
    // Resume alone (each rank a world of its own: one process), and on two other layouts of the 4.
    auto alone = world.split(world.rank(), 0);
    for (auto [dp, pp, tp] : {std::tuple{1, 1, 1}, std::tuple{2, 2, 1}, std::tuple{1, 2, 2}}) {
      Communicator& comm = dp * pp * tp == 1 ? *alone : world;
      GridGroups g = GridGroups::make(comm, dp, pp, tp);
      auto stage = make_stage(GPT(config()), g);
      auto strategy = strategy_of(resumed_by, stage, g, muon);
      const TrainState state = load_grid_checkpoint(path, *strategy, g);
      check(state.iter == 2, fmt::format("rank {}: resumed at iter {}", world.rank(), state.iter));
      auto [x, y] = batch(2);
      strategy->zero_grad();
      const double loss = grid_step(*strategy, g, x, y, 2, PipelineSchedule::kOneForwardOneBackward).loss;
      strategy->step();
      check(std::abs(loss - third_loss) < 1e-12,
            fmt::format("dp {} x pp {} x tp {} resumed ({}): loss {} vs {}", dp, pp, tp, resumed_by, loss, third_loss));
      for (auto& [name, t] : full_state_dict(*strategy)) {  // the stage's whole tensors, on dp rank 0
        if (name.starts_with("optimizer.")) continue;
        const Tensor want = tp > 1 ? expected_piece(name, after.at(name), *g.tp) : after.at(name).detach();
        check(max_abs_diff(t, want) < 1e-12, fmt::format("dp {} x pp {} x tp {} resumed: {} differs", dp, pp, tp, name));
      }
    }
  });
  std::filesystem::remove(path);
  INFO(fmt::format("{} saved on dp {} x pp {} x tp {}, {} resumed{}: {}", saved_by, std::get<0>(saved_on),
                   std::get<1>(saved_on), std::get<2>(saved_on), resumed_by, muon ? " (Muon)" : "", describe(results)));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

TEST_CASE("grid checkpoint: saved under dp 2 x tp 2 (zero1), resumed on one process, dp 2 x pp 2 and pp 2 x tp 2 (fsdp)") {
  save_and_resume("zero1", "fsdp");
}

TEST_CASE("grid checkpoint: saved under dp 2 x tp 2 (fsdp), resumed on one process, dp 2 x pp 2 and pp 2 x tp 2 (ddp)") {
  save_and_resume("fsdp", "ddp");
}

TEST_CASE("grid checkpoint with Muon: saved under dp 2 x tp 2 and pp 2 x tp 2 (momentum on the blocks' matrices, AdamW's moments on the rest), resumed on one process, dp 2 x pp 2 and pp 2 x tp 2") {
  save_and_resume("ddp", "ddp", true);
  save_and_resume("ddp-naive", "ddp", true, {1, 2, 2});
}
