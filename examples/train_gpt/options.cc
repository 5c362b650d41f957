// train_gpt's flags: nanoGPT's names (with their dashed spellings) and the preset's values as their
// defaults; option_checks.cc refuses the combinations that cannot run.
#include "examples/train_gpt/options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <stdexcept>
#include <vector>

#include "cli/numbers.h"
#include "cli/parse.h"
#include "cli/paths.h"
#include "examples/train_gpt/checkpointing.h"
#include "examples/train_gpt/option_checks.h"

namespace ringgrad::examples {
namespace {

// The default corpus from any working directory: data/ from there (the repository root, as the
// README runs it), or in the repository this binary was built in (<repository>/build/bin/train_gpt).
// Throws, naming both places, when it is in neither.
std::string find_default_data(const std::string& relative) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(relative)) return relative;
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "../.." / relative;
  const fs::path found = fs::weakly_canonical(beside, ec);
  if (!ec && fs::is_regular_file(found)) return found.string();
  throw std::invalid_argument(fmt::format("no --data given, and the default {} is neither there (from {}) nor at {} "
                                          "(in the repository): pass --data PATH to the text file",
                                          relative, fs::current_path(ec).string(), ec ? beside.string() : found.string()));
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
  app.add_option_function<std::string>(
         flag("recompute"), [&c](const std::string& name) { c.model.recompute = nn::kRecomputeNames.at(name); },
         "Activations recomputed during backward instead of kept: none, blocks (each block keeps only its input) or "
         "attention (the [B, H, T, T] probabilities)")
      ->check(CLI::IsMember(nn::kRecomputeNames));
  app.add_option(flag("num_experts"), c.model.moe_experts, "Mixture of experts: E expert MLPs per block (0: the dense "
                 "MLP; Megatron's name)")->check(ringgrad::cli::at_least(0));
  app.add_option(flag("moe_router_topk"), c.model.moe_top_k, "Experts per token (1 or 2)")->check(CLI::Range(1, 2));
  app.add_option(flag("moe_expert_capacity_factor"), c.model.moe_capacity_factor,
                 "Rows per expert: ceil(factor x tokens x topk / E); the rest are dropped")->check(ringgrad::cli::kPositive);
  app.add_option(flag("moe_aux_loss_coeff"), c.model.moe_aux_loss_coef, "Coefficient of the load-balancing loss "
                 "E sum_e f_e P_e added to the training loss")->check(ringgrad::cli::kNonNegative);
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
                 "--strategy ddp or ddp-naive; with --tp each matrix's slices gathered and orthogonalised whole)")
      ->check(CLI::IsMember({"adamw", "muon"}));
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

}  // namespace

std::optional<int> parse_options(int argc, char** argv, nn::TrainConfig& cfg, Options& opt) {
  // A preset fills the defaults first, so that every flag can override one field of it.
  std::string preset = "baby";
  CLI::App pre;
  pre.allow_extras();
  pre.set_help_flag();
  pre.add_option("--config", preset);
  if (const auto status = ringgrad::cli::parse(pre, argc, argv)) return *status;
  try {
    cfg = nn::train_preset(preset);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  }

  Paths& paths = opt.paths;
  Sampling& sampling = opt.sampling;
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
  app.add_option(flag("threads"), opt.threads, "BLAS threads per process")->check(ringgrad::cli::at_least(1));
  Distributed& dist = opt.dist;
  app.add_option(flag("strategy"), dist.strategy, "Data parallelism: ddp-naive, ddp, zero1, zero2, fsdp")
      ->check(CLI::IsMember({"ddp-naive", "ddp", "zero1", "zero2", "fsdp"}));
  app.add_option(flag("ep"), dist.ep, "Expert-parallel ranks: the --num_experts experts sharded over groups of this "
                 "many data-parallel ranks (tokens sent to their experts with all_to_all_v)")
      ->check(ringgrad::cli::at_least(1));
  app.add_option(flag("bucket_cap_mb"), dist.bucket_cap_mb, "DDP bucket size in MiB")->check(ringgrad::cli::kPositive);
  app.add_option(flag("overlap"), dist.overlap, "DDP: all-reduce buckets during backward (true) or after it (false)");
  app.add_option(flag("accumulation"), dist.accumulation, "Micro-batches per step (gradient accumulation; on a --tp/--pp/--cp grid, "
                 "pipeline micro-batches: --micro_batches x this many)")
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
  Placement& placement = opt.placement;
  app.add_option(flag("device"), placement.device, "cpu, cuda (under a launcher: cuda:LOCAL_RANK % GPUs) or cuda:N "
                 "(on a --tp/--pp grid the groups stage GPU buffers through host memory; not with --cp)");
  app.add_option(flag("dtype"), placement.dtype, "Matmul precision: fp32, or bf16 (bf16 operands, fp32 accumulation)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option(flag("backend"), placement.backend,
                 "Collectives on GPU tensors: ringgrad (CUDA IPC / staging) or nccl (default: RINGGRAD_BACKEND, else ringgrad)")
      ->check(CLI::IsMember({"ringgrad", "nccl"}));
  ModelParallelOptions& mp = opt.mp;
  const auto ranks = ringgrad::cli::between(1, 1 << 20);
  app.add_option(flag("tp"), mp.tp, "Tensor-parallel ranks per model replica (heads, MLP units and vocabulary split)")
      ->check(ranks);
  app.add_option(flag("pp"), mp.pp, "Pipeline stages per model replica (n_layer / pp blocks each)")->check(ranks);
  app.add_option(flag("cp"), mp.cp, "Context-parallel ranks per model replica (the sequence split, ring attention)")
      ->check(ranks);
  app.add_flag(flag("sp"), mp.sp, "With --tp: sequence parallelism (T/tp positions per rank between the layers)");
  app.add_option(flag("micro_batches"), mp.micro_batches, "With --pp: micro-batches per replica and accumulation step")->check(ranks);
  app.add_option(flag("pp_schedule"), mp.schedule, "With --pp: afab (GPipe), 1f1b, interleaved (1F1B over "
                 "--virtual_stages chunks per stage) or zb-h1 (zero bubble: weight gradients deferred into the bubble)")
      ->check(CLI::IsMember({"afab", "1f1b", "interleaved", "zb-h1"}));
  app.add_option(flag("virtual_stages"), mp.virtual_stages, "With --pp_schedule interleaved: model chunks per stage "
                 "(n_layer / (pp x this) blocks each)")->check(ranks);
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
  try {  // before the checks below, which read the experts' config
    resume_moe_config(cfg.model, paths, [&](const std::string& flag) { return app.count(flag) > 0; });
  } catch (const std::invalid_argument& e) {  // a --resume that is not there
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // an unreadable checkpoint
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 1;
  }
  if (const auto status = refuse_grid_without_ranks(mp, argc, argv)) return status;
  if (const auto status = refuse_bad_combinations(app, cfg, opt)) return status;
  return std::nullopt;
}

}  // namespace ringgrad::examples
