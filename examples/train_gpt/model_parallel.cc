// The model-parallel training loop: the grid, this rank's stage of the model (or its piece of a
// checkpoint), and per iteration the global batch (drawn alike on every rank, as one process
// draws it), grid_step, clipping by the whole model's gradient norm, and AdamW on this rank's
// piece; the whole model saved at the end.
#include "examples/train_gpt/model_parallel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <vector>

#include "collectives/communicator.h"
#include "nn/data/char_dataset.h"
#include "nn/optim.h"
#include "nn/parallel/accelerator.h"
#include "nn/parallel/grid_checkpoint.h"
#include "nn/parallel/grid_training.h"
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
  PipelineStage stage = [&] {
    const nn::GPT whole(cfg.model);
    return make_stage(whole, groups, mp.sp);
  }();
  const nn::AdamOptions adam{cfg.lr, cfg.beta1, cfg.beta2, 1e-8};
  nn::AdamW optimizer(nn::weight_decay_groups(stage, cfg.weight_decay), adam);
  nn::TrainState state{0, Generator(cfg.seed + 1), default_generator()};  // batches drawn as the data-parallel path draws them
  if (!mp.resume.empty()) {
    state = load_grid_checkpoint(mp.resume, stage, optimizer, groups);
    default_generator() = state.dropout_gen;
  }
  if (lead) {
    fmt::print("GPT {} layers, {} heads, C {}, T {}, V {} on a grid of {}", cfg.model.n_layer, cfg.model.n_head,
               cfg.model.n_embd, cfg.model.block_size, cfg.model.vocab_size, groups.describe());
    if (mp.pp > 1) fmt::print("{} micro-batches per replica, {}\n", mp.micro_batches, mp.schedule);
    if (!mp.resume.empty()) fmt::print("resumed from {} at iter {}\n", mp.resume, state.iter);
  }
  std::ofstream log;
  if (lead && !mp.log.empty()) log.open(mp.log, mp.resume.empty() ? std::ios::trunc : std::ios::app);
  const nn::CosineSchedule lr_schedule = cfg.schedule();
  Generator& data_gen = state.data_gen;
  const double tokens_per_iter = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  std::vector<double> step_ms;
  collectives::Communicator* const group_of[] = {groups.tp.get(), groups.cp.get(), groups.pp.get(), groups.dp.get()};
  for (auto* g : group_of) g->reset_stats();
  const std::int64_t first = state.iter;
  std::int64_t it = first;
  for (; it < cfg.max_iters; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    const nn::data::Batch batch = ds.get_batch(nn::data::Split::Train, cfg.batch_size, cfg.model.block_size, data_gen);
    stage.zero_grad();
    const PipelineStepResult r = grid_step(stage, groups, batch.x, batch.y, mp.micro_batches, schedule);
    const double norm = grid_grad_norm(stage, groups);
    if (cfg.grad_clip > 0) nn::scale_grads_(stage.parameters(), nn::clip_coefficient(norm, cfg.grad_clip));
    optimizer.set_lr(lr_schedule.at(it));
    optimizer.step();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    step_ms.push_back(ms);
    if (!mp.out.empty() && mp.save_every > 0 && (it + 1) % mp.save_every == 0) {
      state.iter = it + 1;
      state.dropout_gen = default_generator();
      save_grid_checkpoint(mp.out, stage, optimizer, groups, world, cfg.model, state);
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
  if (lead && !step_ms.empty()) {
    std::nth_element(step_ms.begin(), step_ms.begin() + static_cast<std::ptrdiff_t>(step_ms.size() / 2), step_ms.end());
    const double median = step_ms[step_ms.size() / 2];
    fmt::print("trained {} iterations: median step {:.2f} ms, {:.0f} tokens/s\n", step_ms.size(), median,
               tokens_per_iter / median * 1e3);
  }
  // Each rank's peak resident memory (its piece of the model, its moments, its activations).
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
    save_grid_checkpoint(mp.out, stage, optimizer, groups, world, cfg.model, state);
    if (lead) fmt::print("saved {} (the whole model: it resumes on any layout, or one process)\n", mp.out);
  }
  return 0;
}

}  // namespace ringgrad::examples
