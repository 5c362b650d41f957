// Column sums of a [rows, cols] matrix given element by element, out[j] = sum_r term(r, j): the
// parameter gradients of linear's bias and layer norm. A block of 32 x 8 threads covers 32
// columns of one slice of rows; consecutive threads read consecutive columns (coalesced), 8
// rows at a time, then the 8 partial sums meet in shared memory. Several slices keep the GPU
// busy; their results go to a [slices, cols] scratch that a second pass sums, in a fixed order
// (no atomics), so the result does not depend on timing. Included by .cu files.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensor/cuda_common.h"
#include "tensor/tensor.h"

namespace ringgrad::cuda {

constexpr int kColumnTile = 32, kRowLanes = 8;

template <typename T, typename Term>
__global__ void column_sums_kernel(Term term, std::int64_t rows, std::int64_t cols, std::int64_t rows_per_slice,
                                   T* out) {
  __shared__ T partial[kRowLanes][kColumnTile];
  const std::int64_t j = blockIdx.x * std::int64_t{kColumnTile} + threadIdx.x;
  const std::int64_t begin = blockIdx.y * rows_per_slice;
  const std::int64_t end = begin + rows_per_slice < rows ? begin + rows_per_slice : rows;
  T s = 0;
  if (j < cols) {
    for (std::int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) s += term(r, j);
  }
  partial[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    T total = 0;
    for (int lane = 0; lane < kRowLanes; ++lane) total += partial[lane][threadIdx.x];
    out[blockIdx.y * cols + j] = total;  // row blockIdx.y of the scratch, or out itself with one slice
  }
}

/// Element (r, j) of a contiguous [rows, cols] matrix: the term of a plain column sum.
template <typename T>
struct MatrixElement {
  const T* m;
  std::int64_t cols;
  __device__ T operator()(std::int64_t r, std::int64_t j) const { return m[r * cols + j]; }
};

/// out[j] = sum over r < rows of term(r, j), for j < cols, on GPU `device` (out in its memory).
/// Term: a small struct with `__device__ T operator()(std::int64_t r, std::int64_t j) const`.
template <typename T, typename Term>
void column_sums(int device, const Term& term, std::int64_t rows, std::int64_t cols, T* out) {
  if (cols == 0) return;
  DeviceGuard guard(device);
  const dim3 block(kColumnTile, kRowLanes);
  const std::int64_t col_blocks = (cols + kColumnTile - 1) / kColumnTile;
  // Slices of at least 64 rows, and about 2048 blocks in all: enough to fill a large GPU.
  const std::int64_t slices = std::clamp<std::int64_t>(rows / 64, 1, std::max<std::int64_t>(1, 2048 / col_blocks));
  const std::int64_t rows_per_slice = (rows + slices - 1) / slices;
  if (slices == 1) {
    column_sums_kernel<T><<<dim3(static_cast<unsigned>(col_blocks), 1), block, 0, stream(device)>>>(
        term, rows, cols, std::max<std::int64_t>(rows, 1), out);
    RINGGRAD_CUDA_CHECK(cudaGetLastError());
    return;
  }
  const Tensor scratch = Tensor::empty({slices, cols}, dtype_of<T>(), cuda_device(device));
  column_sums_kernel<T><<<dim3(static_cast<unsigned>(col_blocks), static_cast<unsigned>(slices)), block, 0,
                          stream(device)>>>(term, rows, cols, rows_per_slice, scratch.data<T>());
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
  column_sums_kernel<T><<<dim3(static_cast<unsigned>(col_blocks), 1), block, 0, stream(device)>>>(
      MatrixElement<T>{scratch.data<T>(), cols}, slices, cols, slices, out);
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ringgrad::cuda
