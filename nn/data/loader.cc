// The epoch's order (a permutation seeded by seed + epoch, or 0..n-1), its cut into batches, and
// the gather of a batch's rows out of a data tensor.
#include "nn/data/loader.h"

#include <stdexcept>

#include "tensor/index.h"
#include "tensor/random.h"

namespace ringgrad::nn::data {

std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed, std::int64_t epoch) {
  if (shuffle) {
    Generator gen(seed + static_cast<std::uint64_t>(epoch));
    return randperm(n, gen);
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  return order;
}

std::vector<std::vector<std::int64_t>> make_batches(const std::vector<std::int64_t>& indices,
                                                    std::int64_t batch_size, bool drop_last) {
  if (batch_size < 1) throw std::invalid_argument("make_batches: batch size must be at least 1");
  std::vector<std::vector<std::int64_t>> batches;
  const auto bs = static_cast<std::size_t>(batch_size);
  for (std::size_t start = 0; start < indices.size(); start += bs) {
    const std::size_t end = std::min(indices.size(), start + bs);
    if (drop_last && end - start < bs) break;
    batches.emplace_back(indices.begin() + static_cast<std::ptrdiff_t>(start),
                         indices.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

Tensor take_rows(const Tensor& data, const std::vector<std::int64_t>& batch) {
  return kernels::index_select(data, Tensor::from_vector(batch, {static_cast<std::int64_t>(batch.size())}));
}

}  // namespace ringgrad::nn::data
