// DistributedSampler: which samples of an epoch each rank trains on, with PyTorch's semantics
// (torch.utils.data.distributed.DistributedSampler), so N ranks together see the epoch once.
#pragma once

#include <cstdint>
#include <vector>

namespace ringgrad::nn::data {

/// Splits the epoch's order of `dataset_size` samples over `num_replicas` ranks:
/// - the order is 0..n-1, or with `shuffle` the permutation drawn from seed + epoch (the same
///   on every rank);
/// - without `drop_last` it is padded by repeating indices from its start until it divides
///   evenly; with `drop_last` the tail that does not divide is dropped;
/// - rank r takes positions r, r + num_replicas, r + 2 num_replicas, ...
/// Every rank gets num_samples() indices. Throws std::invalid_argument for rank outside
/// [0, num_replicas) or num_replicas < 1.
class DistributedSampler {
 public:
  DistributedSampler(std::int64_t dataset_size, int num_replicas, int rank, bool shuffle = true,
                     std::uint64_t seed = 0, bool drop_last = false);

  /// A new permutation each epoch (call before iterating, as in PyTorch).
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  /// This rank's indices for the current epoch.
  std::vector<std::int64_t> indices() const;
  /// Indices per rank: ceil(n / replicas), or floor with drop_last.
  std::int64_t num_samples() const { return num_samples_; }

 private:
  std::int64_t dataset_size_;
  int num_replicas_, rank_;
  bool shuffle_;
  std::uint64_t seed_;
  bool drop_last_;
  std::int64_t epoch_ = 0;
  std::int64_t num_samples_;
};

}  // namespace ringgrad::nn::data
