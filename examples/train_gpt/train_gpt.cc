// train_gpt: a character-level GPT on a text file, on one process or many. The loop in train()
// is the whole recipe: evaluate every eval_interval iterations, then one step of forward, loss,
// backward (gradients reduced across ranks by the chosen strategy), clipping and AdamW under a
// warmup + cosine learning rate.
//
//   train_gpt --data ../shared/data/tinyshakespeare.txt --config baby --log run.jsonl --out ckpt.safetensors
//   train_gpt ... --resume ckpt.safetensors --max_iters 3000     # continue exactly where it stopped
//   ringgrad-run --nproc-per-node 2 train_gpt --config baby --strategy ddp
//   train_gpt --config baby --time_budget 60    # as good as it gets in 60 s of training
//   train_gpt --config shakespeare-char --device cuda --dtype bf16   # nanoGPT's GPU recipe
//   ringgrad-run --nproc-per-node 4 train_gpt --config baby --tp 2 --pp 2 --micro_batches 2   # model_parallel.cc
//   ringgrad-run --nproc-per-node 2 train_gpt --config baby --cp 2   # the sequence split, ring attention
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "autograd/ops.h"
#include "autograd/trace.h"
#include "cli/numbers.h"
#include "cli/parse.h"
#include "cli/paths.h"
#include "collectives/collective_error.h"
#include "examples/train_gpt/model_parallel.h"
#include "nn/data/char_dataset.h"
#include "nn/data/idx.h"
#include "nn/muon_adamw.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/data_parallel/sharded_muon.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/timeline.h"
#include "nn/transformer/checkpoint.h"
#include "nn/transformer/train_config.h"
#include "nn/transformer/train_step.h"
#include "tensor/precision.h"
#include "tensor/threads.h"
#include "tensor/view.h"

using namespace ringgrad;
using nn::data::Split;
namespace parallel = ringgrad::nn::parallel;

namespace {

// Where the model trains and how its matmuls round (--device, --dtype).
struct Placement {
  std::string device = "cpu";
  std::string dtype = "fp32";
  std::string backend;  // collectives on GPU tensors: ringgrad or nccl (empty: RINGGRAD_BACKEND)
};

// Training FLOPs per token as nanoGPT's estimate_mfu counts them (PaLM, Chowdhery et al. 2022,
// appendix B): 6 N for the forward and backward of the N weights that take part in matmuls,
// plus 12 L C T for the attention scores and their use (QK^T and att V, forward and backward,
// counted over the full T x T square as nanoGPT does, not the causal half). N leaves out the
// position table and, when lm_head is untied, the token table: lookups do no arithmetic.
double flops_per_token(const nn::GPT& model, std::int64_t n_params) {
  const nn::GPTConfig& c = model.config();
  const std::int64_t lookups = (model.wpe ? model.wpe->weight.numel() : 0) + (c.tie_weights ? 0 : model.wte->weight.numel());
  return 6.0 * static_cast<double>(n_params - lookups) +
         12.0 * static_cast<double>(c.n_layer * c.n_embd * c.block_size);
}

struct Paths {
  std::string data = "../shared/data/tinyshakespeare.txt";
  std::string log, out, resume;
  std::int64_t save_every = 0;  // also write --out every this many iterations (0: at evaluations only)
  std::string trace = std::getenv("RINGGRAD_TRACE") ? std::getenv("RINGGRAD_TRACE") : "";  // a timeline
  std::int64_t trace_iters = 3;  // of this many iterations from the third
};

// The default corpus from any working directory: ../shared/data/ from there (the repository
// root, as the README runs it), or beside the repository this binary was built in
// (<repository>/build/bin/train_gpt). Throws, naming both places, when it is in neither.
std::string find_default_data(const std::string& relative) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(relative)) return relative;
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "../.." / relative;
  const fs::path found = fs::weakly_canonical(beside, ec);
  if (!ec && fs::is_regular_file(found)) return found.string();
  throw std::invalid_argument(fmt::format("no --data given, and the default {} is neither there (from {}) nor at {} "
                                          "(beside the repository): pass --data PATH to the text file",
                                          relative, fs::current_path(ec).string(), ec ? beside.string() : found.string()));
}

// --resume auto: the --out checkpoint when one is there (the run was restarted), else a fresh
// start. Checkpoints are written atomically, so one that is there is whole.
// A named checkpoint that is not there is a usage error (status 2), as a mistyped flag is.
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

struct Sampling {
  std::int64_t tokens = 500;
  double temperature = 0.8;
  std::int64_t top_k = 20;
};

struct Distributed {
  std::string strategy = "ddp";
  double bucket_cap_mb = 25;
  bool overlap = true;
  std::int64_t accumulation = 1;  // micro-batches per step; all but the last under no_sync()
  double time_budget = 0;         // seconds of training; 0: max_iters decides
  bool muon_sharded = true;       // split Muon's orthogonalisations over the ranks (sharded_muon.h)
};

// The middle value (the upper of the two middle ones for an even count, as bench/train_bench).
double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Rows [start, start + n) of a batch.
nn::data::Batch rows(const nn::data::Batch& b, std::int64_t start, std::int64_t n) {
  return {kernels::contiguous(kernels::narrow(b.x, 0, start, n)), kernels::contiguous(kernels::narrow(b.y, 0, start, n))};
}

// "--batch_size,--batch-size": nanoGPT's spelling, and the dashed one train_mlp and the
// launcher use, both accepted.
std::string flag(std::string name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  return dashed == name ? "--" + name : "--" + name + ",--" + dashed;
}

// Every field of the config becomes a flag whose default is the preset's value.
void add_config_flags(CLI::App& app, nn::TrainConfig& c) {
  app.add_option(flag("n_layer"), c.model.n_layer, "Transformer blocks")->check(ringgrad::cli::at_least(1));
  app.add_option(flag("n_head"), c.model.n_head, "Attention heads per block")->check(ringgrad::cli::at_least(1));
  app.add_option(flag("n_embd"), c.model.n_embd, "Channels C")->check(ringgrad::cli::at_least(1));
  app.add_option(flag("block_size"), c.model.block_size, "Context length T")->check(ringgrad::cli::at_least(1));
  app.add_option(flag("dropout"), c.model.dropout, "Dropout probability")->check(ringgrad::cli::kBelowOne);
  app.add_option(flag("bias"), c.model.bias, "Biases in Linear and LayerNorm (true/false)");
  app.add_option(flag("rotary"), c.model.rotary, "Rotary position embeddings on q and k instead of wpe (true/false)");
  app.add_option(flag("qk_norm"), c.model.qk_norm, "Each head's q and k scaled to unit RMS before attention (true/false)");
  app.add_option(flag("relu_squared"), c.model.relu_squared, "MLP activation ReLU(x)^2 instead of GELU (true/false)");
  app.add_option(flag("tie_weights"), c.model.tie_weights, "lm_head shares wte (true/false)");
  app.add_option(flag("batch_size"), c.batch_size,
                 "Global batch: sequences per step over all ranks (each rank takes batch / ranks / accumulation)")
      ->check(ringgrad::cli::at_least(1));
  app.add_option(flag("max_iters"), c.max_iters, "Training iterations")->check(ringgrad::cli::at_least(0));
  app.add_option(flag("lr"), c.lr, "Peak learning rate")->check(ringgrad::cli::kNonNegative);
  app.add_option(flag("min_lr"), c.min_lr, "Learning rate at the end of the cosine decay")->check(ringgrad::cli::kNonNegative);
  app.add_option(flag("warmup_iters"), c.warmup_iters, "Iterations of linear warmup")->check(ringgrad::cli::at_least(0));
  app.add_option(flag("lr_decay_iters"), c.lr_decay_iters, "Iteration where the decay ends (with --time_budget: "
                 "the iteration scale the elapsed fraction of the budget maps onto)")->check(ringgrad::cli::at_least(1));
  app.add_option(flag("lr_schedule"), c.lr_schedule, "cosine (nanoGPT's), or wsd (warmup, the peak held, a linear "
                 "cooldown)")->check(CLI::IsMember({"cosine", "wsd"}));
  app.add_option(flag("cooldown_frac"), c.cooldown_frac, "wsd: the last share of lr_decay_iters spent cooling down")
      ->check(ringgrad::cli::kZeroToOne);
  app.add_option(flag("optimizer"), c.optimizer, "adamw, or muon (Muon on the blocks' matrices, AdamW on the rest; "
                 "--strategy ddp or ddp-naive)")->check(CLI::IsMember({"adamw", "muon"}));
  app.add_option(flag("muon_lr"), c.muon_lr, "Muon's peak learning rate (the schedule scales it as --lr)")
      ->check(ringgrad::cli::kNonNegative);
  app.add_option(flag("muon_momentum"), c.muon_momentum, "Muon's Nesterov momentum")->check(ringgrad::cli::kBelowOne);
  app.add_option(flag("beta1"), c.beta1, "AdamW beta1")->check(ringgrad::cli::kBelowOne);
  app.add_option(flag("beta2"), c.beta2, "AdamW beta2")->check(ringgrad::cli::kBelowOne);
  app.add_option(flag("weight_decay"), c.weight_decay, "AdamW decoupled weight decay (2-D parameters only)")
      ->check(ringgrad::cli::kNonNegative);
  app.add_option(flag("grad_clip"), c.grad_clip, "Max global gradient norm (0: off)")->check(ringgrad::cli::kNonNegative);
  app.add_option(flag("eval_interval"), c.eval_interval, "Iterations between evaluations")->check(ringgrad::cli::at_least(1));
  app.add_option(flag("eval_iters"), c.eval_iters, "Batches per loss estimate")->check(ringgrad::cli::at_least(1));
  app.add_flag(flag("eval_full"), c.eval_full, "At the end, the loss on every validation token once (always with "
                                              "--time_budget)");
  app.add_option(flag("log_interval"), c.log_interval, "Iterations between progress lines")->check(ringgrad::cli::at_least(1));
  app.add_option(flag("seed"), c.seed, "Seed of the weights, the batches and dropout");
}

int train(nn::TrainConfig cfg, const Paths& paths, const Sampling& sampling, const Distributed& dist,
          const Placement& placement) {
  parallel::Accelerator acc(placement.backend);
  const Device device = parallel::select_device(placement.device);
  set_matmul_precision(parse_matmul_precision(placement.dtype));
  const auto ds = nn::data::CharDataset::from_file(paths.data);
  cfg.model.vocab_size = ds.vocab_size();
  const std::int64_t local_batch = acc.local_batch(cfg.batch_size, dist.accumulation);
  manual_seed(cfg.seed);  // the same initial weights on every device: drawn on the CPU, then moved
  auto model = std::make_shared<nn::GPT>(cfg.model);
  model->to(device);  // before the optimizer is made, so its state is made there too
  // AdamW on everything, or (--optimizer muon) Muon on the blocks' matrices and AdamW on the rest.
  const bool muon = cfg.optimizer == "muon";
  const nn::AdamOptions adam{cfg.lr, cfg.beta1, cfg.beta2, 1e-8};
  auto make_optimizer = [&](std::vector<nn::ParamGroup> groups) -> std::unique_ptr<nn::Optimizer> {
    // Every rank orthogonalises its share of the matrices and broadcasts them (sharded_muon.h),
    // or (--muon_sharded false) every rank orthogonalises every matrix: the same updates, slower.
    const nn::MuonOptions whole{cfg.muon_lr, cfg.muon_momentum};
    const nn::MuonOptions muon_options = dist.muon_sharded ? parallel::shard_over(whole, acc.comm()) : whole;
    if (muon) return std::make_unique<nn::MuonWithAdamW>(std::move(groups), 1, muon_options, adam);
    return std::make_unique<nn::AdamW>(std::move(groups), adam);
  };
  parallel::DataParallelOptions options;
  options.bucket_cap_mb = dist.bucket_cap_mb;
  options.overlap = dist.overlap;
  options.fsdp_units.assign(model->h.begin(), model->h.end());  // FSDP gathers one block at a time
  auto dp = acc.prepare(dist.strategy, model,
                        muon ? nn::muon_adamw_groups(*model, cfg.weight_decay) : nn::weight_decay_groups(*model, cfg.weight_decay),
                        make_optimizer, options);
  // Every rank draws the same global batch and trains on its own rows of it: N ranks take the
  // steps one process would take on the whole batch.
  nn::TrainState state{0, Generator(cfg.seed + 1), default_generator()};
  const std::string resume = resume_path(paths);
  if (paths.resume == "auto" && resume.empty()) acc.print("--resume auto: no checkpoint at {} yet, starting fresh\n", paths.out);
  if (!resume.empty()) {
    nn::check_checkpoint_vocab(resume, ds.tokenizer().chars());
    // The parameters' names and shapes cannot tell these choices apart (rotary or learned
    // positions, QK-norm, the activation): the recorded config can.
    const auto saved = nn::checkpoint_config(resume).computation_flags(), wanted = cfg.model.computation_flags();
    for (std::size_t i = 0; i < saved.size(); ++i)
      if (saved[i].second != wanted[i].second)
        throw std::invalid_argument(fmt::format("--resume {}: the checkpoint was trained with --{} {}; pass --{} {} "
                                                "to continue it", resume, saved[i].first, saved[i].second,
                                                saved[i].first, saved[i].second));
    state = nn::checkpoint_state(acc.load(*dp, resume), resume);
    default_generator() = state.dropout_gen;
    acc.print("resumed from {} at iter {}\n", resume, state.iter);
    if (dist.time_budget == 0 && state.iter >= cfg.max_iters) {
      acc.print("the checkpoint is at iteration {}, not before --max_iters {}: nothing to train, only the evaluation; "
                "raise --max_iters to go on\n", state.iter, cfg.max_iters);
    }
  }
  std::ofstream log;
  if (!paths.log.empty() && acc.is_main_process()) {
    log.open(paths.log, resume.empty() ? std::ios::trunc : std::ios::app);
  }
  auto write_log = [&](const nlohmann::json& j) {
    if (log) log << j.dump() << std::endl;
  };
  write_log({{"config", nlohmann::json::parse(nn::train_config_json(cfg))}, {"world_size", acc.world_size()}});

  std::int64_t n_params = 0;
  for (const Tensor& p : model->parameters()) n_params += p.numel();
  acc.print("GPT {} layers, {} heads, C {}, T {}, V {}: {} parameters ({}); {} iters; {} train / {} val tokens\n",
            cfg.model.n_layer, cfg.model.n_head, cfg.model.n_embd, cfg.model.block_size, cfg.model.vocab_size, n_params,
            cfg.model.tie_weights ? "lm_head tied to wte" : "lm_head untied", cfg.max_iters, ds.size(Split::Train),
            ds.size(Split::Val));
  acc.print("strategy {}: {}; on {} with {} matmuls; {}, {} schedule\n", dp->name(),
            acc.batch_split(cfg.batch_size, dist.accumulation), device.str(), matmul_precision_name(matmul_precision()),
            muon ? fmt::format("Muon (lr {}, {}) on the blocks' matrices, AdamW (lr {}) on the rest", cfg.muon_lr,
                               dist.muon_sharded ? "sharded over the ranks" : "every rank orthogonalising every matrix",
                               cfg.lr)
                 : fmt::format("AdamW (lr {})", cfg.lr),
            cfg.lr_schedule);
  auto save = [&](std::int64_t iter) {
    if (paths.out.empty()) return;
    state.iter = iter;
    state.dropout_gen = default_generator();
    acc.save(*dp, paths.out, nn::checkpoint_metadata(cfg.model, ds.tokenizer().chars(), state, dp->optimizer().steps()));
  };
  const std::int64_t first_iter = state.iter;
  auto evaluate = [&](std::int64_t it) {
    // Fixed batches (seeds 4242, 4343) so every evaluation measures the same text. Every rank
    // computes the same estimate (sharded models need every rank in each forward).
    const double train_loss = nn::estimate_loss(*model, ds, Split::Train, cfg.eval_iters, cfg.batch_size, 4242);
    const double val_loss = nn::estimate_loss(*model, ds, Split::Val, cfg.eval_iters, cfg.batch_size, 4343);
    acc.print("eval iter {:5d}: train loss {:.4f}, val loss {:.4f}\n", it, train_loss, val_loss);
    write_log({{"iter", it}, {"train_loss", train_loss}, {"val_loss", val_loss}});
    // Before this run's first step there is nothing new to keep, and writing would replace the
    // user's checkpoint at --out with an untrained model (nanoGPT saves only after iteration 0).
    if (it > first_iter) save(it);
  };

  const double tokens_per_iter = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  const std::int64_t micro = cfg.batch_size / dist.accumulation;  // rows of one micro-step, all ranks
  const auto start = std::chrono::steady_clock::now();
  double train_seconds = 0, comm_wait_seconds = 0;  // in training steps only, not evaluations
  std::vector<double> step_ms;
  parallel::TraceWindow timeline(paths.trace, acc.comm(), model.get(), {}, 2, paths.trace_iters);  // --trace
  std::int64_t it = state.iter;
  for (;; ++it) {
    // With a time budget the schedule runs on the elapsed fraction of it (the training steps'
    // wall clock, summed), and training stops when it is spent; rank 0's clock decides for all.
    const double elapsed =
        dist.time_budget > 0
            ? acc.broadcast_from_main(train_seconds)  // the steps' time only: start-up and evaluation excluded
            : 0;
    const bool done = dist.time_budget > 0 ? elapsed >= dist.time_budget : it >= cfg.max_iters;
    if (!done && it % cfg.eval_interval == 0 && dist.time_budget == 0) evaluate(it);
    if (done) break;

    timeline.at(it);
    const trace::Span iteration("iteration", "step");
    const auto t0 = std::chrono::steady_clock::now();
    const double wait0 = dp->stats().wait_seconds;
    const double lr = dist.time_budget > 0
                          ? cfg.lr_at(static_cast<std::int64_t>(elapsed / dist.time_budget * static_cast<double>(cfg.lr_decay_iters)))
                          : cfg.lr_at(it);
    const nn::data::Batch batch = ds.get_batch(Split::Train, cfg.batch_size, cfg.model.block_size, state.data_gen);
    dp->zero_grad();
    double loss_sum = 0;
    for (std::int64_t m = 0; m < dist.accumulation; ++m) {
      const nn::data::Batch mine = rows(batch, m * micro + acc.rank() * local_batch, local_batch);
      const Tensor loss = cross_entropy(dp->forward(mine.x.to(device)), mine.y.to(device)) *
                          (1.0 / static_cast<double>(dist.accumulation));
      loss_sum += loss.item<double>();
      if (m + 1 < dist.accumulation) {
        auto no_sync = dp->no_sync();
        dp->backward(loss);
      } else {
        dp->backward(loss);
      }
    }
    dp->set_lr(lr);
    const double grad_norm = [&] {
      const trace::Span span("optimizer step", "step");
      return dp->step(cfg.grad_clip);
    }();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    train_seconds += ms / 1e3;
    step_ms.push_back(ms);
    comm_wait_seconds += dp->stats().wait_seconds - wait0;
    if (paths.save_every > 0 && (it + 1) % paths.save_every == 0) save(it + 1);  // the next iteration to run

    if (it % cfg.log_interval == 0) {
      const double loss = acc.mean(loss_sum);
      const double comm_share = comm_wait_seconds / train_seconds;
      const double peak_mib = parallel::peak_memory_mib(device);
      acc.print("iter {:5d}: loss {:.4f}, lr {:.2e}, {:.1f} ms/iter, {:.0f} tokens/s, comm wait {:.1f}%, peak {:.0f} MiB\n",
                it, loss, lr, ms, tokens_per_iter / ms * 1e3, 100 * comm_share, peak_mib);
      write_log({{"iter", it}, {"loss", loss}, {"lr", lr}, {"grad_norm", grad_norm}, {"ms", ms},
                 {"tokens_per_s", tokens_per_iter / ms * 1e3}, {"comm_wait_share", comm_share},
                 {device.is_cpu() ? "peak_rss_mib" : "peak_gpu_mib", peak_mib}});
    }
  }
  timeline.finish(it);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (step_ms.empty()) {
    acc.print("trained 0 iterations\n");  // a resume at max_iters only evaluates
  } else {
    // The loss's item() each step waits for the GPU, so the step times are the GPU's times.
    const double tokens_per_s = tokens_per_iter * static_cast<double>(step_ms.size()) / train_seconds;
    // The median step beside the mean: on a shared machine a few stalled steps move the mean,
    // not the median (the PyTorch twin and bench/train_bench report the median).
    const double median_ms = median(step_ms);
    const double tflops = tokens_per_s * flops_per_token(*model, n_params) / 1e12;
    acc.print("trained {} iterations in {:.1f} s of steps ({:.1f} s wall): {:.0f} tokens/s (median step {:.2f} ms: "
              "{:.0f} tokens/s), {:.3g} TFLOP/s ({:.3g} GFLOP per token: 6 N + 12 L C T, nanoGPT's estimate_mfu)\n",
              step_ms.size(), train_seconds, wall, tokens_per_s, median_ms, tokens_per_iter / median_ms * 1e3, tflops,
              flops_per_token(*model, n_params) / 1e9);
    write_log({{"trained_iters", step_ms.size()}, {"tokens_per_s", tokens_per_s}, {"tflops", tflops},
               {"median_step_ms", median_ms}});
    // Every step ends when the slowest rank ends: the ranks' waits differ by how often each was
    // the one waited for.
    std::vector<std::string> waits;
    for (double w : acc.gather(comm_wait_seconds / train_seconds)) waits.push_back(fmt::format("{:.1f}%", 100 * w));
    if (acc.world_size() > 1) acc.print("comm wait by rank: {}\n", fmt::join(waits, ", "));
  }
  const auto use = parallel::memory_use(*dp);  // measured before evaluation, with this step's gradients held
  constexpr double kMiB = 1 << 20;
  acc.print("model state on rank 0: parameters {:.2f} MiB, gradients {:.2f} MiB, optimizer {:.2f} MiB; peak {} {:.0f} MiB\n",
            use.params / kMiB, use.grads / kMiB, use.optimizer / kMiB, device.is_cpu() ? "RSS" : "GPU memory",
            parallel::peak_memory_mib(device));
  evaluate(it);
  if (!paths.out.empty()) acc.print("saved {}\n", paths.out);
  if (cfg.eval_full || dist.time_budget > 0) {  // the contest's number: every validation token once
    const nn::SplitLoss full = nn::full_split_loss(*model, ds, Split::Val, cfg.batch_size);
    acc.print("full val loss {:.4f} (all {} validation tokens once, windows of {}; seed {}{})\n", full.loss, full.tokens,
              cfg.model.block_size, cfg.seed,
              dist.time_budget > 0 ? fmt::format(", {:.0f} s of training steps, {} iterations", dist.time_budget, it) : "");
    write_log({{"iter", it}, {"full_val_loss", full.loss}, {"val_tokens", full.tokens}, {"seed", cfg.seed},
               {"time_budget_s", dist.time_budget}});
  }

  // Sample from a whole copy of the model on rank 0 (sharded strategies hold only pieces).
  if (sampling.tokens == 0) return 0;
  const nn::StateDict full = parallel::full_state_dict(*dp);
  if (!acc.is_main_process()) return 0;
  nn::GPT sampler(cfg.model);
  sampler.to(device);
  nn::StateDict weights;
  for (const auto& [name, t] : full) {
    if (!name.starts_with("optimizer.")) weights.emplace(name, t);
  }
  sampler.load_state_dict(weights);
  Generator sample_gen(cfg.seed + 2);
  const Tensor prompt = Tensor::from_vector(ds.tokenizer().encode("\n"), {1, 1}).to(device);
  const Tensor out = sampler.generate(prompt, sampling.tokens, sampling.temperature, sampling.top_k, sample_gen);
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
  if (const auto status = ringgrad::cli::parse(pre, argc, argv)) return *status;
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
  CLI::App app{"Train a character-level GPT on a text file, on one process or several (under ringgrad-run)"};
  app.option_defaults()->always_capture_default();
  app.add_option(flag("config"), preset,
                 "Preset: baby (nanoGPT's CPU recipe), shakespeare-char (nanoGPT's GPU recipe), speedrun (the fixed-time "
                 "contest's, docs/speedrun.md) or tiny (a smoke test)");
  app.add_option(flag("data"), paths.data, "Text corpus: first 90% train, last 10% validation");
  app.add_option(flag("log"), paths.log, "Write JSON lines here (appended to on --resume)");
  app.add_option(flag("out"), paths.out, "Checkpoint (.safetensors), written at each evaluation and at the end");
  app.add_option(flag("resume"), paths.resume,
                 "Continue from this checkpoint (model, optimizer, iteration, RNG); auto: from --out if it is there, "
                 "else start fresh (for ringgrad-run --max-restarts)");
  app.add_option(flag("trace"), paths.trace,
                 "Chrome trace-event JSON (and FILE.svg) of iterations 2-4 on every rank (default: RINGGRAD_TRACE)");
  app.add_option(flag("trace_iters"), paths.trace_iters, "Iterations --trace records, from iteration 2")
      ->check(ringgrad::cli::at_least(1));
  app.add_option(flag("save_every"), paths.save_every, "Also write --out every this many iterations")
      ->check(ringgrad::cli::at_least(0));
  app.add_option(flag("threads"), threads, "BLAS threads per process")->check(ringgrad::cli::at_least(1));
  Distributed dist;
  app.add_option(flag("strategy"), dist.strategy, "Data parallelism: ddp-naive, ddp, zero1, zero2, fsdp")
      ->check(CLI::IsMember({"ddp-naive", "ddp", "zero1", "zero2", "fsdp"}));
  app.add_option(flag("bucket_cap_mb"), dist.bucket_cap_mb, "DDP bucket size in MiB")->check(ringgrad::cli::kPositive);
  app.add_option(flag("overlap"), dist.overlap, "DDP: all-reduce buckets during backward (true) or after it (false)");
  app.add_option(flag("accumulation"), dist.accumulation, "Micro-batches per step (gradient accumulation)")
      ->check(ringgrad::cli::at_least(1));
  app.add_option(flag("muon_sharded"), dist.muon_sharded, "Muon under DDP: each rank orthogonalises its share of the "
                 "matrices and broadcasts them (true), or every rank all of them (false; the same updates)");
  app.add_option(flag("time_budget"), dist.time_budget, "Train for this many seconds of training steps (start-up and "
                                                    "evaluation not counted; the schedule follows the elapsed fraction), "
                                                    "then evaluate on every validation token; overrides max_iters")
      ->check(ringgrad::cli::kNonNegative);
  app.add_option(flag("sample_tokens"), sampling.tokens, "Characters to generate at the end (0: no sample)")
      ->check(ringgrad::cli::at_least(0));
  app.add_option(flag("temperature"), sampling.temperature, "Sampling temperature")->check(ringgrad::cli::kPositive);
  app.add_option(flag("top_k"), sampling.top_k, "Sample among the k likeliest characters (0: all)")
      ->check(ringgrad::cli::at_least(0));
  Placement placement;
  app.add_option(flag("device"), placement.device, "cpu, cuda (under a launcher: cuda:LOCAL_RANK % GPUs) or cuda:N");
  app.add_option(flag("dtype"), placement.dtype, "Matmul precision: fp32, or bf16 (bf16 operands, fp32 accumulation)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option(flag("backend"), placement.backend,
                 "Collectives on GPU tensors: ringgrad (CUDA IPC / staging) or nccl (default: RINGGRAD_BACKEND, else ringgrad)")
      ->check(CLI::IsMember({"ringgrad", "nccl"}));
  examples::ModelParallelOptions mp;
  const auto ranks = ringgrad::cli::between(1, 1 << 20);
  app.add_option(flag("tp"), mp.tp, "Tensor-parallel ranks per model replica (heads, MLP units and vocabulary split)")
      ->check(ranks);
  app.add_option(flag("pp"), mp.pp, "Pipeline stages per model replica (n_layer / pp blocks each)")->check(ranks);
  app.add_option(flag("cp"), mp.cp, "Context-parallel ranks per model replica (the sequence split, ring attention)")
      ->check(ranks);
  app.add_flag(flag("sp"), mp.sp, "With --tp: sequence parallelism (T/tp positions per rank between the layers)");
  app.add_option(flag("micro_batches"), mp.micro_batches, "With --pp: micro-batches per replica and step")->check(ranks);
  app.add_option(flag("pp_schedule"), mp.schedule, "With --pp: afab (GPipe) or 1f1b")->check(CLI::IsMember({"afab", "1f1b"}));
  add_config_flags(app, cfg);
  bool print_config = false;
  app.add_flag(flag("print_config"), print_config, "Print the run's whole config (the preset and the flags) as one "
               "JSON line, and stop (what a twin in another framework reads)");
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  if (print_config) {
    fmt::print("{}\n", nn::train_config_json(cfg));
    return 0;
  }
  if (app.count("--data") == 0) {
    try {
      paths.data = find_default_data(paths.data);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "train_gpt: {}\n", e.what());
      return 2;
    }
  }
  for (const auto& [name, path] : {std::pair{"--out", paths.out}, {"--log", paths.log}}) {
    if (const std::string why = path.empty() ? "" : ringgrad::cli::why_unwritable(path); !why.empty()) {
      fmt::print(stderr, "train_gpt: {} {}: {}\n", name, path, why);
      return 2;
    }
  }
  if (paths.save_every > 0 && paths.out.empty()) {
    fmt::print(stderr, "train_gpt: --save_every {} writes the checkpoint named by --out: give --out too\n", paths.save_every);
    return 2;
  }
  if (mp.sp && mp.tp < 2) {
    fmt::print(stderr, "train_gpt: --sp splits the sequence inside the tensor-parallel groups: it needs --tp 2 or more\n");
    return 2;
  }
  if (cfg.optimizer == "muon" && dist.strategy != "ddp" && dist.strategy != "ddp-naive") {
    fmt::print(stderr, "train_gpt: --optimizer muon orthogonalises whole gradient matrices: it needs --strategy ddp or "
                       "ddp-naive (--strategy {} holds each rank's flat shard)\n", dist.strategy);
    return 2;
  }
  if (app.count("--muon_sharded") > 0 && cfg.optimizer != "muon") {
    fmt::print(stderr, "train_gpt: --muon_sharded splits Muon's work: it needs --optimizer muon\n");
    return 2;
  }
  if (mp.pp == 1 && (app.count("--micro_batches") > 0 || app.count("--pp_schedule") > 0)) {
    fmt::print(stderr, "train_gpt: --micro_batches and --pp_schedule need --pp 2 or more (data parallelism splits "
                       "batches with --accumulation)\n");
    return 2;
  }
  if (mp.tp * mp.pp * mp.cp > 1) {
    // The model-parallel path trains on the CPU with its own grid; a flag it would not honour is refused by name.
    std::vector<std::string> refused;
    for (const char* name : {"--accumulation", "--time_budget", "--device", "--dtype", "--backend", "--eval_interval",
                             "--eval_iters", "--eval_full", "--temperature", "--top_k"})
      if (app.count(name) > 0) refused.push_back(name);
    if (sampling.tokens > 0 && app.count("--sample_tokens") > 0) refused.push_back("--sample_tokens");  // 0 asks for none
    for (const std::string& name : cfg.model.data_parallel_only()) refused.push_back("--" + name);
    if (cfg.optimizer != "adamw") refused.push_back("--optimizer " + cfg.optimizer);
    if (!refused.empty()) {
      fmt::print(stderr, "train_gpt: {} {} not available with --tp/--pp/--cp yet (they train in fp32 on the CPU, "
                         "without evaluation or sampling)\n", fmt::join(refused, ", "), refused.size() == 1 ? "is" : "are");
      return 2;
    }
    mp.strategy = dist.strategy;
    mp.dp_options.bucket_cap_mb = dist.bucket_cap_mb;
    mp.dp_options.overlap = dist.overlap;
    mp.log = paths.log;
    mp.out = paths.out;
    mp.save_every = paths.save_every;
    mp.trace = paths.trace;
    mp.trace_iters = paths.trace_iters;
    try {
      mp.resume = resume_path(paths);
    } catch (const std::exception& e) {
      fmt::print(stderr, "train_gpt: {}\n", e.what());
      return 2;
    }
    try {
      set_num_threads(threads);
      return examples::train_model_parallel(cfg, paths.data, mp);
    } catch (const std::exception& e) {
      fmt::print(stderr, "train_gpt: {}\n", e.what());
      return 2;
    }
  }

  try {
    set_num_threads(threads);  // throws std::invalid_argument on a bad RINGGRAD_ONEDNN
    return train(cfg, paths, sampling, dist, placement);
  } catch (const nn::data::DataError& e) {
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const collectives::CollectiveError& e) {  // ranks that disagree (RINGGRAD_CHECK) would again after a restart
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // a batch that does not divide, a bad flag combination
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // a bad flag combination, an unreadable checkpoint
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 1;
  }
}
