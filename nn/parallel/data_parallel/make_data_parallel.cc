// The one place that knows every strategy: a name from the command line to its class.
#include "nn/parallel/data_parallel/make_data_parallel.h"

#include <fmt/format.h>

#include <stdexcept>

#include "nn/parallel/data_parallel/ddp.h"
#include "nn/parallel/data_parallel/ddp_naive.h"
#include "nn/parallel/data_parallel/fsdp.h"
#include "nn/parallel/data_parallel/zero.h"

namespace ringgrad::nn::parallel {

std::unique_ptr<DataParallel> make_data_parallel(const std::string& name, std::shared_ptr<Module> model,
                                                 collectives::Communicator& comm, std::vector<ParamGroup> groups,
                                                 const OptimizerFactory& make_optimizer,
                                                 const DataParallelOptions& options) {
  if (name == "ddp-naive") return std::make_unique<NaiveDataParallel>(std::move(model), comm, std::move(groups), make_optimizer);
  if (name == "ddp") {
    return std::make_unique<DistributedDataParallel>(std::move(model), comm, std::move(groups), make_optimizer,
                                                     options.bucket_cap_mb, options.overlap);
  }
  if (name == "zero1" || name == "zero2") {
    return std::make_unique<ZeroDataParallel>(std::move(model), comm, std::move(groups), make_optimizer, name == "zero1" ? 1 : 2);
  }
  if (name == "fsdp") {
    return std::make_unique<FullyShardedDataParallel>(std::move(model), comm, std::move(groups), make_optimizer,
                                                      options.fsdp_units);
  }
  throw std::invalid_argument(fmt::format("unknown strategy '{}': expected ddp-naive, ddp, zero1, zero2 or fsdp", name));
}

}  // namespace ringgrad::nn::parallel
