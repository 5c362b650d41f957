// Evaluation and sampling for train_gpt, on any layout: every rank computes the same estimates
// (the layout's loss is a collective where the model is split); one rank draws each token from
// the layout's logits and every rank takes it, so all feed the same context to the next forward.
#include "examples/train_gpt/evaluation.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "examples/train_gpt/checkpointing.h"
#include "nn/transformer/train_step.h"
#include "tensor/random.h"

namespace ringgrad::examples {

using nn::data::Split;

void evaluate(Run& run, std::int64_t it) {
  const nn::TrainConfig& cfg = run.cfg;
  // Fixed batches (seeds 4242, 4343) so every evaluation measures the same text.
  const nn::BatchLoss loss = [&run](const Tensor& x, const Tensor& y) { return run.layout.loss(x, y); };
  const std::int64_t t = cfg.model.block_size;
  const double train_loss = nn::estimate_loss(loss, run.ds, Split::Train, cfg.eval_iters, cfg.batch_size, t, 4242);
  const double val_loss = nn::estimate_loss(loss, run.ds, Split::Val, cfg.eval_iters, cfg.batch_size, t, 4343);
  run.acc.print("eval iter {:5d}: train loss {:.4f}, val loss {:.4f}\n", it, train_loss, val_loss);
  run.log.write({{"iter", it}, {"train_loss", train_loss}, {"val_loss", val_loss}});
  // Before this run's first step there is nothing new to keep (nanoGPT saves only after iteration 0).
  if (it > run.first_iter) save_checkpoint(run, it);
}

void report_full_val_loss(Run& run, std::int64_t it) {
  const nn::TrainConfig& cfg = run.cfg;
  const double time_budget = run.opt.dist.time_budget;
  const nn::BatchLoss loss = [&run](const Tensor& x, const Tensor& y) { return run.layout.loss(x, y); };
  const nn::SplitLoss full = nn::full_split_loss(loss, run.ds, Split::Val, cfg.batch_size, cfg.model.block_size);
  run.acc.print("full val loss {:.4f} (all {} validation tokens once, windows of {}; seed {}{})\n", full.loss, full.tokens,
                cfg.model.block_size, cfg.seed,
                time_budget > 0 ? fmt::format(", {:.0f} s of training steps, {} iterations", time_budget, it) : "");
  run.log.write({{"iter", it}, {"full_val_loss", full.loss}, {"val_tokens", full.tokens}, {"seed", cfg.seed},
                 {"time_budget_s", time_budget}});
}

int sample(Run& run) {
  const Sampling& sampling = run.opt.sampling;
  if (sampling.tokens == 0) return 0;
  Generator sample_gen(run.cfg.seed + 2);
  const auto& tokenizer = run.ds.tokenizer();
  const std::int64_t v = run.cfg.model.vocab_size, block = run.cfg.model.block_size;
  std::vector<std::int64_t> ids = tokenizer.encode("\n");
  for (std::int64_t i = 0; i < sampling.tokens; ++i) {
    const std::int64_t len = std::min<std::int64_t>(static_cast<std::int64_t>(ids.size()), block);
    const Tensor logits = run.layout.last_logits(Tensor::from_vector(std::vector<std::int64_t>(ids.end() - len, ids.end()), {1, len}));
    // The one rank with the logits draws (GPT::generate's draw); the sum over the ranks is its token.
    double token = logits.defined() ? static_cast<double>(nn::sample_token(logits.data<float>(), v, sampling.temperature,
                                                                           sampling.top_k, sample_gen)) : 0.0;
    run.acc.comm().all_reduce(collectives::ConstBuffer(&token, 1, collectives::DType::kFloat64),
                              collectives::Buffer(&token, 1, collectives::DType::kFloat64), collectives::ReduceOp::SUM);
    ids.push_back(static_cast<std::int64_t>(token));
  }
  run.acc.print("--- sample ({} tokens, temperature {}, top_k {}) ---\n{}\n", sampling.tokens, sampling.temperature,
                sampling.top_k, tokenizer.decode(ids));
  return 0;
}

}  // namespace ringgrad::examples
