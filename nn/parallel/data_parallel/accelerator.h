// Accelerator: the one object a training script needs to run on one process or many (in the
// spirit of Hugging Face Accelerate). It reads the launcher's environment (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT; without them: one process), joins the job, wraps model and
// optimizer in the chosen data-parallel strategy, splits batches and data, prints on rank 0,
// and saves or resumes full checkpoints on any world size.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/communicator.h"
#include "nn/data/distributed_sampler.h"
#include "nn/parallel/data_parallel/make_data_parallel.h"

namespace ringgrad::nn::parallel {

class Accelerator {
 public:
  /// Joins the job described by the environment. `backend` ("ringgrad" or "nccl") runs the
  /// collectives on GPU tensors; empty means RINGGRAD_BACKEND, else ringgrad. Host tensors always
  /// go over ringgrad's TCP path. Throws transport::TransportError when the rendezvous fails,
  /// std::invalid_argument for a malformed environment or backend name, CollectiveError for
  /// nccl without NCCL or a visible GPU.
  explicit Accelerator(std::string_view backend = "");

  int rank() const { return comm_->rank(); }
  int world_size() const { return comm_->world_size(); }
  bool is_main_process() const { return rank() == 0; }
  collectives::Communicator& comm() { return *comm_; }

  /// fmt::print on rank 0 only, flushed.
  template <typename... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) const {
    if (!is_main_process()) return;
    fmt::print(format, std::forward<Args>(args)...);
    std::fflush(stdout);  // line by line through a pipe too (the launcher, tee)
  }

  /// Wraps `model` and the optimizer for `strategy` (see make_data_parallel).
  std::unique_ptr<DataParallel> prepare(const std::string& strategy, std::shared_ptr<Module> model,
                                        std::vector<ParamGroup> groups, const OptimizerFactory& make_optimizer,
                                        const DataParallelOptions& options = {});

  /// This rank's share of a data set of `size` samples (PyTorch's DistributedSampler).
  data::DistributedSampler sampler(std::int64_t size, bool shuffle, std::uint64_t seed, bool drop_last = false) const;

  /// Samples per rank per micro-step: global_batch / (world size x accumulation steps).
  /// Throws std::invalid_argument naming the three numbers when that does not divide.
  std::int64_t local_batch(std::int64_t global_batch, std::int64_t accumulation_steps = 1) const;
  /// "global batch 12 = 2 ranks x 6 x 1 accumulation step".
  std::string batch_split(std::int64_t global_batch, std::int64_t accumulation_steps = 1) const;

  /// Collective: the mean of `value` over all ranks (e.g. the loss for a progress line).
  double mean(double value);
  /// Collective: rank 0's `value` on every rank, so that all ranks decide alike (stop now?).
  double broadcast_from_main(double value);
  /// Collective: every rank's `value`, indexed by rank, on every rank (e.g. each rank's wait).
  std::vector<double> gather(double value);

  /// Collective: gathers the full training state to rank 0, which writes it to `path`
  /// (.safetensors) with `metadata`. Throws std::runtime_error when the file cannot be written.
  void save(DataParallel& dp, const std::string& path, const std::map<std::string, std::string>& metadata = {});
  /// Every rank reads `path` and takes its part; returns the metadata. Works whatever world
  /// size saved it. Throws std::runtime_error for a missing or corrupt file.
  std::map<std::string, std::string> load(DataParallel& dp, const std::string& path);

 private:
  std::unique_ptr<collectives::Communicator> comm_;
};

/// The largest resident set size this process has had so far, in MiB (getrusage).
double peak_rss_mib();

/// The device a --device flag names for this process: "cpu", "cuda:N", or "cuda", which is
/// cuda:(local rank % visible GPUs) so that the ranks of one machine take one GPU each (local
/// rank from LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID; 0 without a launcher).
/// Throws std::invalid_argument for a malformed name and std::runtime_error, saying why, when
/// the GPU it names is not visible.
Device select_device(const std::string& name);

/// The peak memory of training on `device`, in MiB: on a GPU the high-water mark of bytes the
/// caching allocator handed out (cuda::memory_stats), on the CPU the peak RSS.
double peak_memory_mib(Device device);

}  // namespace ringgrad::nn::parallel
