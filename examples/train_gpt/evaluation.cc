// Evaluation and sampling for train_gpt: every rank computes the same estimates (sharded models
// need every rank in each forward); rank 0 alone samples, from the weights gathered to it.
#include "examples/train_gpt/evaluation.h"

#include <fmt/format.h>

#include "examples/train_gpt/checkpointing.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/transformer/train_step.h"

namespace ringgrad::examples {

using nn::data::Split;

void evaluate(Run& run, std::int64_t it) {
  const nn::TrainConfig& cfg = run.cfg;
  // Fixed batches (seeds 4242, 4343) so every evaluation measures the same text.
  const double train_loss = nn::estimate_loss(run.model, run.ds, Split::Train, cfg.eval_iters, cfg.batch_size, 4242);
  const double val_loss = nn::estimate_loss(run.model, run.ds, Split::Val, cfg.eval_iters, cfg.batch_size, 4343);
  run.acc.print("eval iter {:5d}: train loss {:.4f}, val loss {:.4f}\n", it, train_loss, val_loss);
  run.log.write({{"iter", it}, {"train_loss", train_loss}, {"val_loss", val_loss}});
  // Before this run's first step there is nothing new to keep (nanoGPT saves only after iteration 0).
  if (it > run.first_iter) save_checkpoint(run, it);
}

void report_full_val_loss(Run& run, std::int64_t it) {
  const nn::TrainConfig& cfg = run.cfg;
  const double time_budget = run.opt.dist.time_budget;
  const nn::SplitLoss full = nn::full_split_loss(run.model, run.ds, Split::Val, cfg.batch_size);
  run.acc.print("full val loss {:.4f} (all {} validation tokens once, windows of {}; seed {}{})\n", full.loss, full.tokens,
                cfg.model.block_size, cfg.seed,
                time_budget > 0 ? fmt::format(", {:.0f} s of training steps, {} iterations", time_budget, it) : "");
  run.log.write({{"iter", it}, {"full_val_loss", full.loss}, {"val_tokens", full.tokens}, {"seed", cfg.seed},
                 {"time_budget_s", time_budget}});
}

int sample(Run& run) {
  const Sampling& sampling = run.opt.sampling;
  if (sampling.tokens == 0) return 0;
  // Sharded strategies hold only pieces of the model: every rank sends its pieces to rank 0.
  const nn::StateDict full = nn::parallel::full_state_dict(run.dp);
  if (!run.acc.is_main_process()) return 0;
  nn::GPT sampler(run.cfg.model);
  sampler.to(run.device);
  nn::StateDict weights;
  for (const auto& [name, t] : full) {
    if (!name.starts_with("optimizer.")) weights.emplace(name, t);
  }
  sampler.load_state_dict(weights);
  Generator sample_gen(run.cfg.seed + 2);
  const auto& tokenizer = run.ds.tokenizer();
  const Tensor prompt = Tensor::from_vector(tokenizer.encode("\n"), {1, 1}).to(run.device);
  const Tensor out = sampler.generate(prompt, sampling.tokens, sampling.temperature, sampling.top_k, sample_gen);
  fmt::print("--- sample ({} tokens, temperature {}, top_k {}) ---\n{}\n", sampling.tokens, sampling.temperature,
             sampling.top_k, tokenizer.decode(out.to_vector<std::int64_t>()));
  return 0;
}

}  // namespace ringgrad::examples
