// Accelerator's pieces: the communicator from the launcher's environment (one process without
// one), the batch split, small collectives on one double, checkpoints written by rank 0 and read
// by all, and the GPU each local rank takes.
#include "nn/parallel/data_parallel/accelerator.h"

#include <sys/resource.h>

#include <cstdlib>
#include <stdexcept>

#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/tensor_buffer.h"
#include "nn/safetensors.h"
#include "tensor/cuda_runtime.h"

namespace ringgrad::nn::parallel {
namespace {

// One process when no launcher set the environment: world size 1, nothing to rendezvous with.
transport::Config config_from_env() {
  return transport::Config::launched() ? transport::Config::from_env() : transport::Config{};
}

collectives::CommOptions options_with(std::string_view backend) {
  collectives::CommOptions options = collectives::CommOptions::from_env();
  if (!backend.empty()) options.backend = collectives::parse_backend(backend);
  return options;
}

}  // namespace

Accelerator::Accelerator(std::string_view backend)
    : comm_(std::make_unique<collectives::Communicator>(config_from_env(), options_with(backend))) {}

std::unique_ptr<DataParallel> Accelerator::prepare(const std::string& strategy, std::shared_ptr<Module> model,
                                                   std::vector<ParamGroup> groups,
                                                   const OptimizerFactory& make_optimizer,
                                                   const DataParallelOptions& options) {
  return make_data_parallel(strategy, std::move(model), *comm_, std::move(groups), make_optimizer, options);
}

data::DistributedSampler Accelerator::sampler(std::int64_t size, bool shuffle, std::uint64_t seed, bool drop_last) const {
  return data::DistributedSampler(size, world_size(), rank(), shuffle, seed, drop_last);
}

std::int64_t Accelerator::local_batch(std::int64_t global_batch, std::int64_t accumulation_steps) const {
  const std::int64_t parts = world_size() * accumulation_steps;
  if (global_batch <= 0 || accumulation_steps <= 0 || global_batch % parts != 0) {
    throw std::invalid_argument(fmt::format(
        "global batch {} does not divide into {} ranks x {} accumulation steps: choose a multiple of {}",
        global_batch, world_size(), accumulation_steps, parts));
  }
  return global_batch / parts;
}

std::string Accelerator::batch_split(std::int64_t global_batch, std::int64_t accumulation_steps) const {
  return fmt::format("global batch {} = {} rank{} x {} x {} accumulation step{}", global_batch, world_size(),
                     world_size() == 1 ? "" : "s", local_batch(global_batch, accumulation_steps), accumulation_steps,
                     accumulation_steps == 1 ? "" : "s");
}

double Accelerator::mean(double value) {
  Tensor t = Tensor::full({1}, value, DType::Float64);
  comm_->all_reduce(synced_buffer(t), synced_buffer(t), collectives::ReduceOp::AVG);
  return t.item<double>();
}

double Accelerator::broadcast_from_main(double value) {
  Tensor t = Tensor::full({1}, value, DType::Float64);
  comm_->broadcast(synced_buffer(t), synced_buffer(t), 0);
  return t.item<double>();
}

std::vector<double> Accelerator::gather(double value) {
  const Tensor mine = Tensor::full({1}, value, DType::Float64);
  Tensor all = Tensor::zeros({world_size()}, DType::Float64);
  comm_->all_gather(synced_buffer(mine), synced_buffer(all));
  return all.to_vector<double>();
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

Device select_device(const std::string& name) {
  Device device = Device::parse(name);
  if (device.is_cpu()) return device;
  const int count = cuda::device_count();
  if (count == 0) throw std::runtime_error("--device " + name + ": no GPU is visible (" + cuda::unavailable_reason() + ")");
  if (name == "cuda") {
    int local_rank = 0;
    for (const char* var : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
      if (const char* value = std::getenv(var)) {
        local_rank = std::atoi(value);
        break;
      }
    }
    device.index = local_rank % count;
  }
  if (device.index >= count) {
    throw std::runtime_error(fmt::format("--device {}: only {} GPU{} visible", name, count, count == 1 ? " is" : "s are"));
  }
  return device;
}

double peak_memory_mib(Device device) {
  if (device.is_cpu()) return peak_rss_mib();
  return static_cast<double>(cuda::memory_stats(device.index).peak_allocated) / (1 << 20);
}

void Accelerator::save(DataParallel& dp, const std::string& path, const std::map<std::string, std::string>& metadata) {
  StateDict state = full_state_dict(dp);
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("strategy", dp.name());
  meta.emplace("world_size", std::to_string(world_size()));
  if (is_main_process()) save_safetensors(path, state, meta);
  comm_->barrier();  // nobody reads the file before it is complete
}

std::map<std::string, std::string> Accelerator::load(DataParallel& dp, const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  load_full_state_dict(dp, file.tensors);
  return file.metadata;
}

}  // namespace ringgrad::nn::parallel
