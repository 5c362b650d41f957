// One warp per row: the launch shape of the row kernels (layer norm, the attention softmax).
// A 256-thread block holds 8 warps, each on its own row, in a grid-stride loop over rows.
// Every lane of a warp has the same row, so its shuffles always run with all 32 lanes.
// Included by .cu files.
#pragma once

#include <cstdint>

#include "tensor/cuda_common.h"
#include "tensor/cuda_warp.h"

namespace ringgrad::cuda {

constexpr int kRowsPerBlock = kThreads / kWarp;

/// Blocks for `rows` rows, one warp each (at most blocks_for's cap; the loop covers the rest).
inline unsigned blocks_for_rows(std::int64_t rows) { return blocks_for(rows * kWarp); }
/// This warp's first row, and the step to its next: for (r = first_row(); r < rows; r += row_step()).
__device__ inline std::int64_t first_row() { return blockIdx.x * std::int64_t{kRowsPerBlock} + threadIdx.x / kWarp; }
__device__ inline std::int64_t row_step() { return std::int64_t{gridDim.x} * kRowsPerBlock; }
/// This thread's lane in its warp: it handles elements lane, lane + 32, ... of the row.
__device__ inline int lane() { return static_cast<int>(threadIdx.x) % kWarp; }

}  // namespace ringgrad::cuda
