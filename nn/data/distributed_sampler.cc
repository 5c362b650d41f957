// DistributedSampler's index lists: the epoch's order, padded by cycling from its start (or cut
// with drop_last) to a multiple of the ranks, then every num_replicas-th index from `rank` on.
#include "nn/data/distributed_sampler.h"

#include <fmt/format.h>

#include <stdexcept>

#include "nn/data/loader.h"

namespace ringgrad::nn::data {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int num_replicas, int rank, bool shuffle,
                                       std::uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  if (num_replicas < 1 || rank < 0 || rank >= num_replicas) {
    throw std::invalid_argument(fmt::format("DistributedSampler: rank {} is not in [0, {})", rank, num_replicas));
  }
  num_samples_ = drop_last ? dataset_size / num_replicas : (dataset_size + num_replicas - 1) / num_replicas;
}

std::vector<std::int64_t> DistributedSampler::indices() const {
  std::vector<std::int64_t> order = epoch_order(dataset_size_, shuffle_, seed_, epoch_);
  const auto total = static_cast<std::size_t>(num_samples_ * num_replicas_);
  // Pad by cycling from the start (several times over when the data set is tiny), or cut.
  for (std::size_t i = 0; order.size() < total; ++i) order.push_back(order[i]);
  order.resize(total);
  std::vector<std::int64_t> mine;
  for (std::size_t i = static_cast<std::size_t>(rank_); i < total; i += static_cast<std::size_t>(num_replicas_)) {
    mine.push_back(order[i]);
  }
  return mine;
}

}  // namespace ringgrad::nn::data
