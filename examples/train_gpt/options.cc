// train_gpt's flags: nanoGPT's names (with their dashed spellings), the preset's values as their
// defaults, and the combinations that cannot run refused by name before any work starts.
#include "examples/train_gpt/options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <stdexcept>
#include <vector>

#include "cli/numbers.h"
#include "cli/parse.h"
#include "cli/paths.h"
#include "examples/train_gpt/checkpointing.h"
#include "transport/config.h"
#include "transport/error.h"

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

// Refuses what cannot run, printing why: an unwritable --out, --log or --trace, and flags that need
// another flag. Returns the exit status (2) when something is refused.
std::optional<int> refuse_bad_combinations(const CLI::App& app, const nn::TrainConfig& cfg, const Options& opt) {
  const Paths& paths = opt.paths;
  const Distributed& dist = opt.dist;
  const ModelParallelOptions& mp = opt.mp;
  for (const auto& [name, path] : {std::pair{"--out", paths.out}, {"--log", paths.log}, {"--trace", paths.trace}}) {
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
  if (mp.pp == 1 && (app.count("--micro_batches") > 0 || app.count("--pp_schedule") > 0 ||
                     app.count("--virtual_stages") > 0)) {
    fmt::print(stderr, "train_gpt: --micro_batches, --pp_schedule and --virtual_stages need --pp 2 or more (data "
                       "parallelism splits batches with --accumulation)\n");
    return 2;
  }
  if ((mp.schedule == "interleaved") != (mp.virtual_stages > 1)) {
    if (mp.schedule == "interleaved")
      fmt::print(stderr, "train_gpt: --pp_schedule interleaved needs --virtual_stages 2 or more (got {})\n",
                 mp.virtual_stages);
    else
      fmt::print(stderr, "train_gpt: --virtual_stages {} needs --pp_schedule interleaved\n", mp.virtual_stages);
    return 2;
  }
  if (mp.schedule == "interleaved") {
    const std::int64_t chunks = std::int64_t{mp.pp} * mp.virtual_stages, m = mp.micro_batches * dist.accumulation;
    if (cfg.model.n_layer % chunks != 0) {
      fmt::print(stderr, "train_gpt: --pp {} x --virtual_stages {} cuts the blocks into {} model chunks: n_layer {} "
                         "does not divide into them\n", mp.pp, mp.virtual_stages, chunks, cfg.model.n_layer);
      return 2;
    }
    if (m % mp.pp != 0) {
      fmt::print(stderr, "train_gpt: --pp_schedule interleaved needs the pipeline's micro-batches (--micro_batches {} "
                         "x --accumulation {} = {}) to be a multiple of --pp {}\n", mp.micro_batches,
                 dist.accumulation, m, mp.pp);
      return 2;
    }
  }
  if (dist.ep > 1) {
    // Expert parallelism runs over the data-parallel ranks (on a grid, over groups of ep
    // consecutive ranks of each dp group) with its own gradient reduction.
    std::vector<std::string> refused;
    if (cfg.model.moe_experts == 0 || cfg.model.moe_experts % dist.ep != 0)
      refused.push_back(fmt::format("--num_experts {} (not divisible into {} expert-parallel ranks)", cfg.model.moe_experts, dist.ep));
    if (dist.strategy != "ddp" && dist.strategy != "ddp-naive")
      refused.push_back("--strategy " + dist.strategy + " (the experts reduce over their own group, naively)");
    if (cfg.optimizer != "adamw") refused.push_back("--optimizer " + cfg.optimizer + " (it shares whole matrices over the ranks)");
    if (opt.placement.device != "cpu")
      refused.push_back("--device " + opt.placement.device + " (all_to_all_v takes host buffers)");
    if (!refused.empty()) {
      fmt::print(stderr, "train_gpt: {} {} not available with --ep {}\n", fmt::join(refused, ", "),
                 refused.size() == 1 ? "is" : "are", dist.ep);
      return 2;
    }
  }
  if (cfg.model.moe_experts > 0 && cfg.model.recompute == nn::Recompute::Blocks) {
    fmt::print(stderr, "train_gpt: --recompute blocks is not available with --num_experts {} (the load-balancing loss "
                       "is read from the block's first forward, which a recomputed block runs without a graph); "
                       "--recompute attention is\n", cfg.model.moe_experts);
    return 2;
  }
  if (cfg.model.moe_experts > 0 && (mp.cp > 1 || (mp.sp && mp.tp > 1))) {
    // Capacity and the load-balancing loss are per forward call: a rank holding a part of the
    // positions would route them with another capacity than one process does.
    fmt::print(stderr, "train_gpt: --num_experts {} is not available with {} (a rank holds a part of each sequence's "
                       "positions, which would route with another capacity and load-balancing loss than one process's "
                       "micro-batch); --tp without --sp and --pp are\n", cfg.model.moe_experts,
               mp.cp > 1 ? "--cp" : "--sp");
    return 2;
  }
  if (mp.tp * mp.pp * mp.cp > 1) {
    // The model's split, checked here so that each rank refuses it before any starts work.
    if (cfg.model.n_head % mp.tp != 0) {
      fmt::print(stderr, "train_gpt: --tp {} splits the attention heads: n_head {} does not divide into {} "
                         "tensor-parallel ranks\n", mp.tp, cfg.model.n_head, mp.tp);
      return 2;
    }
    if (cfg.model.n_layer % mp.pp != 0) {
      fmt::print(stderr, "train_gpt: --pp {} splits the blocks: n_layer {} does not divide into {} pipeline stages\n",
                 mp.pp, cfg.model.n_layer, mp.pp);
      return 2;
    }
    // What the grid's layers cannot do yet, refused by name with the reason.
    std::vector<std::string> refused;
    if (opt.placement.device != "cpu" && mp.cp > 1)
      refused.push_back("--device " + opt.placement.device + " with --cp (ring attention runs as CPU loops)");
    if (!refused.empty()) {
      fmt::print(stderr, "train_gpt: {} {} not available with --tp/--pp/--cp\n", fmt::join(refused, ", "),
                 refused.size() == 1 ? "is" : "are");
      return 2;
    }
  }
  return std::nullopt;
}

// Model parallelism needs tp x pp x cp ranks per model replica and a whole number of replicas.
// Without a launcher there is one rank: prints the command that starts them (ringgrad-run
// beside this program as it was called). Returns 2 when the world cannot hold the grid.
std::optional<int> refuse_grid_without_ranks(const ModelParallelOptions& mp, int argc, char** argv) {
  const int model_ranks = mp.tp * mp.pp * mp.cp;
  if (model_ranks == 1) return std::nullopt;
  if (!transport::Config::launched()) {
    std::vector<std::string> split;
    for (const auto& [name, ranks] : {std::pair{"--tp", mp.tp}, {"--pp", mp.pp}, {"--cp", mp.cp}})
      if (ranks > 1) split.push_back(fmt::format("{} {}", name, ranks));
    const std::string program = argv[0];
    const std::size_t slash = program.rfind('/');
    const std::string launcher = (slash == std::string::npos ? "" : program.substr(0, slash + 1)) + "ringgrad-run";
    fmt::print(stderr, "train_gpt: {} needs {} ranks (tp x pp x cp); start it with {} --nproc-per-node {} {}\n",
               fmt::join(split, " "), model_ranks, launcher, model_ranks, fmt::join(argv, argv + argc, " "));
    return 2;
  }
  int world_size = 1;
  try {
    world_size = transport::Config::from_env().world_size;
  } catch (const transport::TransportError& e) {  // a launcher's variable that is not a number
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  }
  if (world_size % model_ranks != 0) {
    fmt::print(stderr, "train_gpt: --tp {} x --pp {} x --cp {} = {} ranks per model replica does not divide the {} "
                       "ranks\n", mp.tp, mp.pp, mp.cp, model_ranks, world_size);
    return 2;
  }
  return std::nullopt;
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
