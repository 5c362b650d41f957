// Resuming and saving train_gpt's runs: checkpoints are written atomically, so one that is there
// is whole, and hold the one-process format, so a run resumes on any number of ranks.
#include "examples/train_gpt/checkpointing.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "nn/data/idx.h"

namespace ringgrad::examples {

std::string resume_path(const Paths& paths) {
  if (paths.resume.empty()) return "";
  if (paths.resume != "auto") {
    try {
      nn::data::require_file(paths.resume);
    } catch (const nn::data::DataError& e) {
      throw std::invalid_argument(fmt::format("--resume {}", e.what()));
    }
    return paths.resume;
  }
  if (paths.out.empty()) throw std::invalid_argument("--resume auto continues from --out: give --out too");
  return std::ifstream(paths.out).good() ? paths.out : "";
}

void resume_moe_config(nn::GPTConfig& model, const Paths& paths, const std::function<bool(const std::string&)>& given) {
  const std::string resume = resume_path(paths);
  if (resume.empty()) return;
  const nn::GPTConfig saved = nn::checkpoint_config(resume);
  if (!given("--num_experts")) model.moe_experts = saved.moe_experts;
  if (!given("--moe_router_topk")) model.moe_top_k = saved.moe_top_k;
  if (!given("--moe_expert_capacity_factor")) model.moe_capacity_factor = saved.moe_capacity_factor;
  if (!given("--moe_aux_loss_coeff")) model.moe_aux_loss_coef = saved.moe_aux_loss_coef;
}

nn::TrainState start_or_resume(nn::parallel::Accelerator& acc, Layout& layout,
                               const nn::TrainConfig& cfg, const nn::data::CharDataset& ds, const Options& opt,
                               const std::string& resume) {
  // Every rank draws the same global batch and trains on its own rows of it: N ranks take the
  // steps one process would take on the whole batch.
  nn::TrainState state{0, Generator(cfg.seed + 1), default_generator()};
  if (opt.paths.resume == "auto" && resume.empty())
    acc.print("--resume auto: no checkpoint at {} yet, starting fresh\n", opt.paths.out);
  if (resume.empty()) return state;
  nn::check_checkpoint_vocab(resume, ds.tokenizer().chars());
  // The parameters' names and shapes cannot tell these choices apart (rotary or learned
  // positions, QK-norm, the activation): the recorded config can.
  const auto saved = nn::checkpoint_config(resume).computation_flags(), wanted = cfg.model.computation_flags();
  for (std::size_t i = 0; i < saved.size(); ++i)
    if (saved[i].second != wanted[i].second)
      throw std::invalid_argument(fmt::format("--resume {}: the checkpoint was trained with --{} {}; pass --{} {} "
                                              "to continue it", resume, saved[i].first, saved[i].second,
                                              saved[i].first, saved[i].second));
  state = layout.load(resume);
  default_generator() = state.dropout_gen;
  acc.print("resumed from {} at iter {}\n", resume, state.iter);
  if (opt.dist.time_budget == 0 && state.iter >= cfg.max_iters) {
    acc.print("the checkpoint is at iteration {}, not before --max_iters {}: nothing to train, only the evaluation; "
              "raise --max_iters to go on\n", state.iter, cfg.max_iters);
  }
  return state;
}

void save_checkpoint(Run& run, std::int64_t iter) {
  if (run.opt.paths.out.empty()) return;
  run.state.iter = iter;
  run.state.dropout_gen = default_generator();
  run.layout.save(run.opt.paths.out, run.state);
}

}  // namespace ringgrad::examples
