// train_gpt's command line: the preset (--config) fills nn::TrainConfig, every flag can then
// override one field of it, and the options below say where the run reads and writes, how the
// ranks split the work, and what it samples at the end.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "nn/transformer/train_config.h"

namespace ringgrad::examples {

// Where the model trains and how its matmuls round (--device, --dtype).
struct Placement {
  std::string device = "cpu";
  std::string dtype = "fp32";
  std::string backend;  // collectives on GPU tensors: ringgrad or nccl (empty: RINGGRAD_BACKEND)
};

struct Paths {
  std::string data = "data/tinyshakespeare.txt";
  std::string log, out, resume;
  std::int64_t save_every = 0;  // also write --out every this many iterations (0: at evaluations only)
  std::string trace = std::getenv("RINGGRAD_TRACE") ? std::getenv("RINGGRAD_TRACE") : "";  // a timeline
  std::int64_t trace_iters = 3;  // of this many iterations from the third
};

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
  int ep = 1;                     // expert-parallel group size, over the data-parallel ranks
};

// The model-parallel grid: --tp, --pp or --cp above 1 lay the ranks out as dp x pp x cp x tp,
// dp the rest of the world (grid_layout.cc).
struct ModelParallelOptions {
  int tp = 1, pp = 1, cp = 1;
  bool sp = false;                // sequence parallelism inside the tp groups
  int micro_batches = 1;          // pipeline micro-batches per replica and accumulation step
  std::string schedule = "1f1b";  // or afab, interleaved, zb-h1
  int virtual_stages = 1;         // model chunks per stage (interleaved)
  bool grid() const { return tp * pp * cp > 1; }
};

struct Options {
  Paths paths;
  Sampling sampling;
  Distributed dist;
  Placement placement;
  ModelParallelOptions mp;
  int threads = 1;          // BLAS threads per process
};

/// Parses argv into `cfg` (the --config preset, then the flags) and `opt`, and refuses flag
/// combinations that cannot run, printing why to stderr. Returns the exit status when the
/// program should stop here (2 for a usage error, 0 after --help or --print_config), else nothing.
std::optional<int> parse_options(int argc, char** argv, nn::TrainConfig& cfg, Options& opt);

}  // namespace ringgrad::examples
