// make_data_parallel: a strategy by name, as --strategy spells it, with the knobs of those that
// have them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/parallel/data_parallel/data_parallel.h"

namespace ringgrad::nn::parallel {

/// Knobs of the strategies that have them.
struct DataParallelOptions {
  /// DDP: bucket size in MiB (PyTorch's bucket_cap_mb).
  double bucket_cap_mb = 25;
  /// DDP: start each bucket's all-reduce from backward (true), or all of them after backward
  /// (false: the same communication without overlap, to measure what overlap hides).
  bool overlap = true;
  /// FSDP: the modules gathered one at a time (e.g. the transformer blocks); empty: each child
  /// of the model.
  std::vector<std::shared_ptr<Module>> fsdp_units;
};

/// Builds the strategy `name` ("ddp-naive", "ddp", "zero1", "zero2", "fsdp"). Throws
/// std::invalid_argument for an unknown name.
std::unique_ptr<DataParallel> make_data_parallel(const std::string& name, std::shared_ptr<Module> model,
                                                 collectives::Communicator& comm, std::vector<ParamGroup> groups,
                                                 const OptimizerFactory& make_optimizer,
                                                 const DataParallelOptions& options = {});

}  // namespace ringgrad::nn::parallel
