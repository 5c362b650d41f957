// The combinations of train_gpt's flags that cannot run: each refused by name, with the numbers,
// before any work starts.
#include "examples/train_gpt/option_checks.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <stdexcept>
#include <vector>

#include "cli/parse.h"
#include "cli/paths.h"
#include "examples/train_gpt/checkpointing.h"
#include "transport/config.h"
#include "transport/error.h"

namespace ringgrad::examples {

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

}  // namespace ringgrad::examples
