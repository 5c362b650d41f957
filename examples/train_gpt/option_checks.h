// The combinations of train_gpt's flags that cannot run, refused by name on every rank before
// any work starts (options.cc calls these once the flags are parsed).
#pragma once

#include <optional>

#include <CLI/CLI.hpp>

#include "examples/train_gpt/options.h"

namespace ringgrad::examples {

/// Refuses what cannot run, printing why: an unwritable --out, --log or --trace, and flags that
/// need another flag or cannot go together. Returns the exit status (2) when something is refused.
std::optional<int> refuse_bad_combinations(const CLI::App& app, const nn::TrainConfig& cfg, const Options& opt);

/// Model parallelism needs tp x pp x cp ranks per model replica and a whole number of replicas.
/// Without a launcher there is one rank: prints the command that starts them (ringgrad-run
/// beside this program as it was called). Returns 2 when the world cannot hold the grid.
std::optional<int> refuse_grid_without_ranks(const ModelParallelOptions& mp, int argc, char** argv);

}  // namespace ringgrad::examples
