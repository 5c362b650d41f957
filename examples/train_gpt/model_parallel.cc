// The model-parallel training loop: the grid, this rank's stage of the model (or its piece of a
// checkpoint) inside the data-parallel strategy, and per iteration the global batch (drawn alike
// on every rank, as one process draws it), grid_step, and the strategy's step (clipping by the
// whole model's gradient norm, AdamW on this rank's piece); the whole model saved at the end.
#include "examples/train_gpt/model_parallel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "examples/train_gpt/report.h"
#include "examples/train_gpt/run_log.h"
#include "nn/data/char_dataset.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/grid/grid_checkpoint.h"
#include "nn/parallel/grid/grid_training.h"
#include "nn/parallel/timeline.h"
#include "nn/transformer/train_step.h"
#include "tensor/random.h"
#include "trace/trace.h"

namespace ringgrad::examples {

using namespace nn::parallel;

namespace {

// The grid's communicators in the order the reports name them.
constexpr const char* kGroupNames[] = {"tp", "cp", "pp", "dp"};
std::vector<collectives::Communicator*> groups_of(const GridGroups& groups) {
  return {groups.tp.get(), groups.cp.get(), groups.pp.get(), groups.dp.get()};
}

// The dp x pp x cp x tp grid over the world's ranks, dp what is left of the world (options.cc
// refused a grid that does not divide it).
GridGroups make_grid(collectives::Communicator& world, const ModelParallelOptions& mp) {
  return GridGroups::make(world, world.world_size() / (mp.tp * mp.pp * mp.cp), mp.pp, mp.tp, mp.cp);
}

// Iteration 0 with the batches drawn as the data-parallel path draws them, or (mp.resume) the
// checkpoint's pieces for this rank, its iteration and generators. Throws std::invalid_argument
// for a checkpoint of another vocabulary.
nn::TrainState start_or_resume(const ModelParallelOptions& mp, DataParallel& dp, GridGroups& groups,
                               const nn::TrainConfig& cfg, const std::string& vocab) {
  nn::TrainState state{0, Generator(cfg.seed + 1), default_generator()};
  if (mp.resume.empty()) return state;
  nn::check_checkpoint_vocab(mp.resume, vocab);
  state = load_grid_checkpoint(mp.resume, dp, groups);
  default_generator() = state.dropout_gen;
  return state;
}

void print_grid(const nn::TrainConfig& cfg, const GridGroups& groups, const DataParallel& dp,
                const ModelParallelOptions& mp, std::int64_t resumed_iter) {
  fmt::print("GPT {} layers, {} heads, C {}, T {}, V {} on a grid of {}", cfg.model.n_layer, cfg.model.n_head,
             cfg.model.n_embd, cfg.model.block_size, cfg.model.vocab_size, groups.describe());
  if (groups.dp->world_size() > 1) fmt::print("strategy {} inside the {} data-parallel replicas\n", dp.name(), groups.dp->world_size());
  if (mp.pp > 1) fmt::print("{} micro-batches per replica, {}\n", mp.micro_batches, mp.schedule);
  if (!mp.resume.empty()) fmt::print("resumed from {} at iter {}\n", mp.resume, resumed_iter);
}

// Collective: writes the whole model to mp.out, recording `iter` as the next iteration to run.
void save(const ModelParallelOptions& mp, DataParallel& dp, GridGroups& groups, collectives::Communicator& world,
          const nn::TrainConfig& cfg, const std::string& vocab, nn::TrainState& state, std::int64_t iter) {
  state.iter = iter;
  state.dropout_gen = default_generator();
  save_grid_checkpoint(mp.out, dp, groups, world, cfg.model, vocab, state);
}

// What one step asked of each of this rank's groups (their counters since the loop began).
void print_step_communication(const GridGroups& groups) {
  const auto group_of = groups_of(groups);
  for (std::size_t i = 0; i < group_of.size(); ++i)
    if (group_of[i]->world_size() > 1) fmt::print("  one step's {}: {}\n", kGroupNames[i], group_of[i]->stats().describe());
}

// Collective: the median step, what rank 0 keeps of the model (its stage's piece, or its dp shard
// of that) with this step's gradients held, and each rank's peak resident memory (that, its
// activations, the process); printed by rank 0 when it trained.
void report(collectives::Communicator& world, const DataParallel& dp, std::vector<double> step_ms, double tokens_per_iter) {
  const bool lead = world.rank() == 0;
  if (lead && !step_ms.empty()) {
    const double median_ms = median(step_ms);
    fmt::print("trained {} iterations: median step {:.2f} ms, {:.0f} tokens/s\n", step_ms.size(), median_ms,
               tokens_per_iter / median_ms * 1e3);
  }
  const MemoryUse use = memory_use(dp);
  constexpr double kMiB = 1 << 20;
  if (lead && !step_ms.empty())
    fmt::print("model state on rank 0: parameters {:.2f} MiB, gradients {:.2f} MiB, optimizer {:.2f} MiB\n",
               use.params / kMiB, use.grads / kMiB, use.optimizer / kMiB);
  double peak = peak_memory_mib(kCPU);
  std::vector<double> peaks(static_cast<std::size_t>(world.world_size()));
  world.all_gather(collectives::buffer(std::span<const double>(&peak, 1)), collectives::buffer(std::span<double>(peaks)));
  if (lead && !step_ms.empty()) {
    std::vector<std::string> by_rank;
    for (double m : peaks) by_rank.push_back(fmt::format("{:.0f}", m));
    fmt::print("peak RSS by rank (MiB): {}\n", fmt::join(by_rank, ", "));
  }
}

}  // namespace

int train_model_parallel(nn::TrainConfig cfg, const std::string& data, const ModelParallelOptions& mp) {
  collectives::Communicator world(transport::Config::from_env());
  GridGroups groups = make_grid(world, mp);
  const bool lead = world.rank() == 0;
  const PipelineSchedule schedule = parse_pipeline_schedule(mp.schedule);
  const auto ds = nn::data::CharDataset::from_file(data);
  cfg.model.vocab_size = ds.vocab_size();
  manual_seed(cfg.seed);  // the weights one process would draw; each rank keeps its piece
  std::shared_ptr<PipelineStage> stage = make_stage(nn::GPT(cfg.model), groups, mp.sp);
  auto make_adamw = [&](std::vector<nn::ParamGroup> param_groups) {
    return std::make_unique<nn::AdamW>(std::move(param_groups), nn::AdamOptions{cfg.lr, cfg.beta1, cfg.beta2, 1e-8});
  };
  const auto dp = grid_data_parallel(mp.strategy, stage, groups, cfg.weight_decay, make_adamw, mp.dp_options);
  const std::string& vocab = ds.tokenizer().chars();
  nn::TrainState state = start_or_resume(mp, *dp, groups, cfg, vocab);
  if (lead) print_grid(cfg, groups, *dp, mp, state.iter);
  RunLog log(mp.log, lead, !mp.resume.empty());
  const double tokens_per_iter = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  std::vector<double> step_ms;
  for (auto* g : groups_of(groups)) g->reset_stats();
  TraceWindow timeline(mp.trace, world, stage.get(),
                       {&world, groups.tp.get(), groups.cp.get(), groups.pp.get(), groups.dp.get()}, 2, mp.trace_iters);
  const std::int64_t first = state.iter;
  std::int64_t it = first;
  for (; it < cfg.max_iters; ++it) {
    timeline.at(it);
    const trace::Span iteration("iteration", "step");
    const auto t0 = std::chrono::steady_clock::now();
    const nn::data::Batch batch = ds.get_batch(nn::data::Split::Train, cfg.batch_size, cfg.model.block_size, state.data_gen);
    dp->zero_grad();
    const PipelineStepResult r = grid_step(*dp, groups, batch.x, batch.y, mp.micro_batches, schedule);
    dp->set_lr(cfg.lr_at(it));
    const double norm = [&] {  // the whole model's norm, clipped to grad_clip
      const trace::Span span("optimizer step", "step");
      return dp->step(cfg.grad_clip);
    }();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    step_ms.push_back(ms);
    if (!mp.out.empty() && mp.save_every > 0 && (it + 1) % mp.save_every == 0)
      save(mp, *dp, groups, world, cfg, vocab, state, it + 1);
    if (lead && it % cfg.log_interval == 0) {
      fmt::print("iter {:5d}: loss {:.4f}, grad norm {:.3f}, {:.1f} ms/iter, {:.0f} tokens/s\n", it, r.loss, norm, ms,
                 tokens_per_iter / ms * 1e3);
      log.write({{"iter", it}, {"loss", r.loss}, {"grad_norm", norm}, {"ms", ms}});
    }
    if (lead && it == first) print_step_communication(groups);
  }
  timeline.finish(it);
  report(world, *dp, std::move(step_ms), tokens_per_iter);
  if (!mp.out.empty()) {
    save(mp, *dp, groups, world, cfg, vocab, state, it);
    if (lead) fmt::print("saved {} (the whole model: it resumes on any layout, or one process)\n", mp.out);
  }
  return 0;
}

}  // namespace ringgrad::examples
