// Batches of sample indices for an epoch: a seeded permutation (or 0..N-1) cut into batches.
// The distributed sampler hands this loader only its own rank's indices.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::nn::data {

/// 0..n-1, or its permutation drawn from Generator(seed + epoch) when `shuffle`: the same
/// order on every process that uses the same seed and epoch (PyTorch's convention).
std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed, std::int64_t epoch);

/// Splits `indices` into consecutive batches of `batch_size`; the last, shorter batch is kept
/// unless `drop_last`.
std::vector<std::vector<std::int64_t>> make_batches(const std::vector<std::int64_t>& indices,
                                                    std::int64_t batch_size, bool drop_last = false);

/// Rows `batch` of `data` ([N, ...]) as a new tensor [batch.size(), ...].
Tensor take_rows(const Tensor& data, const std::vector<std::int64_t>& batch);

}  // namespace ringgrad::nn::data
