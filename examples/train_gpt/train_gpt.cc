// train_gpt: a character-level GPT on a text file, one process. The loop in train() is the
// whole recipe: evaluate every eval_interval iterations, then one step of forward, loss,
// backward, clipping and AdamW under a warmup + cosine learning rate.
//
//   train_gpt --data ../shared/data/tinyshakespeare.txt --config baby --log run.jsonl --out ckpt.safetensors
//   train_gpt ... --resume ckpt.safetensors --max_iters 3000     # continue exactly where it stopped
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "nn/data/char_dataset.h"
#include "nn/data/idx.h"
#include "nn/transformer/checkpoint.h"
#include "nn/transformer/train_config.h"
#include "nn/transformer/train_step.h"
#include "tensor/threads.h"

using namespace ringgrad;
using nn::data::Split;

namespace {

struct Paths {
  std::string data = "../shared/data/tinyshakespeare.txt";
  std::string log, out, resume;
};

struct Sampling {
  std::int64_t tokens = 500;
  double temperature = 0.8;
  std::int64_t top_k = 20;
};

// Every field of the config becomes a flag whose default is the preset's value.
void add_config_flags(CLI::App& app, nn::TrainConfig& c) {
  app.add_option("--n_layer", c.model.n_layer, "Transformer blocks");
  app.add_option("--n_head", c.model.n_head, "Attention heads per block");
  app.add_option("--n_embd", c.model.n_embd, "Channels C");
  app.add_option("--block_size", c.model.block_size, "Context length T");
  app.add_option("--dropout", c.model.dropout, "Dropout probability");
  app.add_option("--bias", c.model.bias, "Biases in Linear and LayerNorm (true/false)");
  app.add_option("--tie_weights", c.model.tie_weights, "lm_head shares wte (true/false)");
  app.add_option("--batch_size", c.batch_size, "Sequences per step B");
  app.add_option("--max_iters", c.max_iters, "Training iterations");
  app.add_option("--lr", c.lr, "Peak learning rate");
  app.add_option("--min_lr", c.min_lr, "Learning rate at the end of the cosine decay");
  app.add_option("--warmup_iters", c.warmup_iters, "Iterations of linear warmup");
  app.add_option("--lr_decay_iters", c.lr_decay_iters, "Iteration where the cosine decay ends");
  app.add_option("--beta1", c.beta1, "AdamW beta1");
  app.add_option("--beta2", c.beta2, "AdamW beta2");
  app.add_option("--weight_decay", c.weight_decay, "AdamW decoupled weight decay (2-D parameters only)");
  app.add_option("--grad_clip", c.grad_clip, "Max global gradient norm (0: off)");
  app.add_option("--eval_interval", c.eval_interval, "Iterations between evaluations")->check(CLI::PositiveNumber);
  app.add_option("--eval_iters", c.eval_iters, "Batches per loss estimate")->check(CLI::PositiveNumber);
  app.add_option("--log_interval", c.log_interval, "Iterations between progress lines")->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "Seed of the weights, the batches and dropout");
}

int train(nn::TrainConfig cfg, const Paths& paths, const Sampling& sampling) {
  const auto ds = nn::data::CharDataset::from_file(paths.data);
  cfg.model.vocab_size = ds.vocab_size();
  manual_seed(cfg.seed);
  nn::GPT model(cfg.model);
  nn::AdamW optimizer(nn::weight_decay_groups(model, cfg.weight_decay), {cfg.lr, cfg.beta1, cfg.beta2, 1e-8});
  nn::TrainState state{0, Generator(cfg.seed + 1), default_generator()};
  if (!paths.resume.empty()) {
    state = nn::load_checkpoint(paths.resume, model, optimizer);
    default_generator() = state.dropout_gen;
    fmt::print("resumed from {} at iter {}\n", paths.resume, state.iter);
  }
  std::ofstream log;
  if (!paths.log.empty()) log.open(paths.log, paths.resume.empty() ? std::ios::trunc : std::ios::app);
  auto write_log = [&](const nlohmann::json& j) {
    if (log) log << j.dump() << std::endl;
  };

  std::int64_t n_params = 0;
  for (const Tensor& p : model.parameters()) n_params += p.numel();
  fmt::print("GPT {} layers, {} heads, C {}, T {}, V {}: {} parameters ({}); batch {}, {} iters; {} train / {} val tokens\n",
             cfg.model.n_layer, cfg.model.n_head, cfg.model.n_embd, cfg.model.block_size, cfg.model.vocab_size,
             n_params, cfg.model.tie_weights ? "lm_head tied to wte" : "lm_head untied", cfg.batch_size,
             cfg.max_iters, ds.size(Split::Train), ds.size(Split::Val));
  auto save = [&](std::int64_t iter) {
    if (paths.out.empty()) return;
    state.iter = iter;
    state.dropout_gen = default_generator();
    nn::save_checkpoint(paths.out, model, optimizer, state);
  };

  const nn::CosineSchedule schedule = cfg.schedule();
  const double tokens_per_iter = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  for (std::int64_t it = state.iter;; ++it) {
    if (it % cfg.eval_interval == 0 || it == cfg.max_iters) {
      // Fixed batches (seeds 4242, 4343) so every evaluation measures the same text.
      const double train_loss = nn::estimate_loss(model, ds, Split::Train, cfg.eval_iters, cfg.batch_size, 4242);
      const double val_loss = nn::estimate_loss(model, ds, Split::Val, cfg.eval_iters, cfg.batch_size, 4343);
      fmt::print("eval iter {:5d}: train loss {:.4f}, val loss {:.4f}\n", it, train_loss, val_loss);
      write_log({{"iter", it}, {"train_loss", train_loss}, {"val_loss", val_loss}});
      save(it);
    }
    if (it >= cfg.max_iters) break;

    const auto t0 = std::chrono::steady_clock::now();
    const double lr = schedule.at(it);
    const nn::data::Batch batch = ds.get_batch(Split::Train, cfg.batch_size, cfg.model.block_size, state.data_gen);
    const nn::StepResult step = nn::train_step(model, optimizer, batch, lr, cfg.grad_clip);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    if (it % cfg.log_interval == 0 || it + 1 == cfg.max_iters) {
      fmt::print("iter {:5d}: loss {:.4f}, lr {:.2e}, {:.1f} ms/iter, {:.0f} tokens/s\n", it, step.loss, lr, ms,
                 tokens_per_iter / ms * 1e3);
      write_log({{"iter", it}, {"loss", step.loss}, {"lr", lr}, {"grad_norm", step.grad_norm}, {"ms", ms},
                 {"tokens_per_s", tokens_per_iter / ms * 1e3}});
    }
  }
  if (!paths.out.empty()) fmt::print("saved {}\n", paths.out);

  Generator sample_gen(cfg.seed + 2);
  const Tensor start = Tensor::from_vector(ds.tokenizer().encode("\n"), {1, 1});
  const Tensor out = model.generate(start, sampling.tokens, sampling.temperature, sampling.top_k, sample_gen);
  fmt::print("--- sample ({} tokens, temperature {}, top_k {}) ---\n{}\n", sampling.tokens, sampling.temperature,
             sampling.top_k, ds.tokenizer().decode(out.to_vector<std::int64_t>()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen, even in a log file
  // A preset fills the defaults first, so that every flag can override one field of it.
  std::string preset = "baby";
  CLI::App pre;
  pre.allow_extras();
  pre.set_help_flag();
  pre.add_option("--config", preset);
  CLI11_PARSE(pre, argc, argv);
  nn::TrainConfig cfg;
  try {
    cfg = nn::train_preset(preset);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  }

  Paths paths;
  Sampling sampling;
  int threads = 1;
  CLI::App app{"Train a character-level GPT on a text file"};
  app.add_option("--config", preset, "Preset: baby (nanoGPT's CPU recipe) or tiny (a smoke test)");
  app.add_option("--data", paths.data, "Text corpus: first 90% train, last 10% validation");
  app.add_option("--log", paths.log, "Write JSON lines here (appended to on --resume)");
  app.add_option("--out", paths.out, "Checkpoint (.safetensors), written at each evaluation and at the end");
  app.add_option("--resume", paths.resume, "Continue from this checkpoint (model, optimizer, iteration, RNG)");
  app.add_option("--threads", threads, "BLAS threads")->check(CLI::PositiveNumber);
  app.add_option("--sample_tokens", sampling.tokens, "Characters to generate at the end");
  app.add_option("--temperature", sampling.temperature, "Sampling temperature")->check(CLI::PositiveNumber);
  app.add_option("--top_k", sampling.top_k, "Sample among the k likeliest characters (0: all)");
  add_config_flags(app, cfg);
  CLI11_PARSE(app, argc, argv);

  set_num_threads(threads);
  try {
    return train(cfg, paths, sampling);
  } catch (const nn::data::DataError& e) {
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // a bad flag combination, an unreadable checkpoint
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 1;
  }
}
