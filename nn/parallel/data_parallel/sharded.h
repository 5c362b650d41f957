// What ZeRO and FSDP share: every parameter is split into world-size equal shards (padded
// with zeros to a multiple of the world size), rank r owns shard r, and the optimizer runs on
// the shards only. Gradients reach the owners by reduce-scatter; parameters are rebuilt from
// the shards by all-gather (Rajbhandari et al., "ZeRO", SC 2020).
#pragma once

#include <vector>

#include "nn/parallel/data_parallel/data_parallel.h"

namespace ringgrad::nn::parallel {

class ShardedDataParallel : public DataParallel {
 public:
  using DataParallel::DataParallel;

 protected:
  /// Elements of parameter i per shard; the padded full length is shard * world size.
  std::int64_t shard_numel(std::size_t i) const { return shard_numel_[i]; }
  std::int64_t padded_numel(std::size_t i) const { return shard_numel_[i] * comm_.world_size(); }
  /// Records the shard sizes of every parameter (called first by subclass constructors).
  void plan_shards();
  /// Rebuilds the optimizer over `shards` (one per parameter, in params_ order) in the same
  /// group layout as the model's parameters (called by subclass constructors).
  void rebuild_optimizer(const std::vector<Tensor>& shards, const OptimizerFactory& make_optimizer);

  /// Starts the reduce-scatter of parameter i's full gradient into its shard's gradient
  /// (averaged over ranks). The gradient is copied into a padded buffer first, so the caller
  /// may drop it at once.
  void reduce_scatter_gradient(std::size_t i);
  /// Waits for every started reduce-scatter and hands the results to the shards.
  void finish_reduce_scatters();
  /// All-gathers every rank's `shard` into `full` (padded_numel elements, contiguous).
  void all_gather_into(const Tensor& shard, const Tensor& full, bool async);
  void finish_all_gathers();

  double global_norm_squared(double local) override;
  Tensor full_optimizer_state(std::size_t i, const std::string& name) override;
  void load_optimizer_state(std::size_t i, const std::string& name, const Tensor& full) override;
  /// This rank's slice [rank * shard, (rank + 1) * shard) of `full` (parameter i's shape),
  /// zero-padded: what a shard holds of a full tensor.
  Tensor slice_of(std::size_t i, const Tensor& full) const;
  /// The inverse: all-gather a shard-sized tensor of parameter i back to its full shape.
  Tensor gather_full(std::size_t i, const Tensor& shard);

  /// The optimizer's tensor for each parameter: this rank's shard of it.
  std::vector<Tensor> shards_;

 private:
  struct Pending {
    std::size_t param;
    Tensor send, recv;
    collectives::Work work;
  };
  std::vector<std::int64_t> shard_numel_;
  std::vector<Pending> reductions_;
  std::vector<collectives::Work> gathers_;
};

}  // namespace ringgrad::nn::parallel
