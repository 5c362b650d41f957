// The model-parallel training loop: the grid, this rank's stage of the model (or its piece of a
// checkpoint) inside the data-parallel strategy, and per iteration the global batch (drawn alike
// on every rank, as one process draws it), grid_step, and the strategy's step (clipping by the
// whole model's gradient norm, AdamW on this rank's piece); the whole model saved at the end.
#include "examples/train_gpt/model_parallel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <vector>

#include "autograd/trace.h"
#include "collectives/communicator.h"
#include "nn/data/char_dataset.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/grid/grid_checkpoint.h"
#include "nn/parallel/grid/grid_training.h"
#include "nn/parallel/timeline.h"
#include "nn/transformer/train_step.h"
#include "tensor/random.h"

namespace ringgrad::examples {

int train_model_parallel(nn::TrainConfig cfg, const std::string& data, const ModelParallelOptions& mp) {
  using namespace nn::parallel;
  collectives::Communicator world(transport::Config::from_env());
  const int model_ranks = mp.tp * mp.pp * mp.cp;
  if (world.world_size() % model_ranks != 0)
    throw std::invalid_argument(fmt::format("--tp {} x --pp {} x --cp {} = {} ranks per model replica does not divide "
                                            "the {} ranks", mp.tp, mp.pp, mp.cp, model_ranks, world.world_size()));
  GridGroups groups = GridGroups::make(world, world.world_size() / model_ranks, mp.pp, mp.tp, mp.cp);
  const bool lead = world.rank() == 0;
  const PipelineSchedule schedule = parse_pipeline_schedule(mp.schedule);
  const auto ds = nn::data::CharDataset::from_file(data);
  cfg.model.vocab_size = ds.vocab_size();
  manual_seed(cfg.seed);  // the weights one process would draw; each rank keeps its piece
  std::shared_ptr<PipelineStage> stage = [&] {
    const nn::GPT whole(cfg.model);
    return make_stage(whole, groups, mp.sp);
  }();
  auto make_adamw = [&](std::vector<nn::ParamGroup> param_groups) {
    return std::make_unique<nn::AdamW>(std::move(param_groups), nn::AdamOptions{cfg.lr, cfg.beta1, cfg.beta2, 1e-8});
  };
  const auto dp = grid_data_parallel(mp.strategy, stage, groups, cfg.weight_decay, make_adamw, mp.dp_options);
  nn::TrainState state{0, Generator(cfg.seed + 1), default_generator()};  // batches drawn as the data-parallel path draws them
  const std::string& vocab = ds.tokenizer().chars();
  if (!mp.resume.empty()) {
    nn::check_checkpoint_vocab(mp.resume, vocab);
    state = load_grid_checkpoint(mp.resume, *dp, groups);
    default_generator() = state.dropout_gen;
  }
  if (lead) {
    fmt::print("GPT {} layers, {} heads, C {}, T {}, V {} on a grid of {}", cfg.model.n_layer, cfg.model.n_head,
               cfg.model.n_embd, cfg.model.block_size, cfg.model.vocab_size, groups.describe());
    if (groups.dp->world_size() > 1) fmt::print("strategy {} inside the {} data-parallel replicas\n", dp->name(), groups.dp->world_size());
    if (mp.pp > 1) fmt::print("{} micro-batches per replica, {}\n", mp.micro_batches, mp.schedule);
    if (!mp.resume.empty()) fmt::print("resumed from {} at iter {}\n", mp.resume, state.iter);
  }
  std::ofstream log;
  if (lead && !mp.log.empty()) log.open(mp.log, mp.resume.empty() ? std::ios::trunc : std::ios::app);
  Generator& data_gen = state.data_gen;
  const double tokens_per_iter = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  std::vector<double> step_ms;
  collectives::Communicator* const group_of[] = {groups.tp.get(), groups.cp.get(), groups.pp.get(), groups.dp.get()};
  for (auto* g : group_of) g->reset_stats();
  nn::parallel::TraceWindow timeline(mp.trace, world, stage.get(),
                                     {&world, groups.tp.get(), groups.cp.get(), groups.pp.get(), groups.dp.get()}, 2,
                                     mp.trace_iters);
  const std::int64_t first = state.iter;
  std::int64_t it = first;
  for (; it < cfg.max_iters; ++it) {
    timeline.at(it);
    const trace::Span iteration("iteration", "step");
    const auto t0 = std::chrono::steady_clock::now();
    const nn::data::Batch batch = ds.get_batch(nn::data::Split::Train, cfg.batch_size, cfg.model.block_size, data_gen);
    dp->zero_grad();
    const PipelineStepResult r = grid_step(*dp, groups, batch.x, batch.y, mp.micro_batches, schedule);
    dp->set_lr(cfg.lr_at(it));
    const double norm = [&] {  // the whole model's norm, clipped to grad_clip
      const trace::Span span("optimizer step", "step");
      return dp->step(cfg.grad_clip);
    }();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    step_ms.push_back(ms);
    if (!mp.out.empty() && mp.save_every > 0 && (it + 1) % mp.save_every == 0) {
      state.iter = it + 1;
      state.dropout_gen = default_generator();
      save_grid_checkpoint(mp.out, *dp, groups, world, cfg.model, vocab, state);
    }
    if (lead && it % cfg.log_interval == 0) {
      fmt::print("iter {:5d}: loss {:.4f}, grad norm {:.3f}, {:.1f} ms/iter, {:.0f} tokens/s\n", it, r.loss, norm, ms,
                 tokens_per_iter / ms * 1e3);
      if (log) log << nlohmann::json{{"iter", it}, {"loss", r.loss}, {"grad_norm", norm}, {"ms", ms}}.dump() << std::endl;
    }
    if (lead && it == first) {  // what one step asked of each of this rank's groups
      const char* names[] = {"tp", "cp", "pp", "dp"};
      for (int i = 0; i < 4; ++i)
        if (group_of[i]->world_size() > 1) fmt::print("  one step's {}: {}\n", names[i], group_of[i]->stats().describe());
    }
  }
  timeline.finish(it);
  if (lead && !step_ms.empty()) {
    std::nth_element(step_ms.begin(), step_ms.begin() + static_cast<std::ptrdiff_t>(step_ms.size() / 2), step_ms.end());
    const double median = step_ms[step_ms.size() / 2];
    fmt::print("trained {} iterations: median step {:.2f} ms, {:.0f} tokens/s\n", step_ms.size(), median,
               tokens_per_iter / median * 1e3);
  }
  // What rank 0 keeps of the model (its stage's piece, or its dp shard of that) with this step's
  // gradients held, and each rank's peak resident memory (that, its activations, the process).
  const MemoryUse use = memory_use(*dp);
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
  if (!mp.out.empty()) {
    state.iter = it;
    state.dropout_gen = default_generator();
    save_grid_checkpoint(mp.out, *dp, groups, world, cfg.model, vocab, state);
    if (lead) fmt::print("saved {} (the whole model: it resumes on any layout, or one process)\n", mp.out);
  }
  return 0;
}

}  // namespace ringgrad::examples
