// CUDA twins of reduce.cc. A reduction is seen as a virtual [outputs, m] matrix (the kept dims,
// then the reduced ones) summed along m. When the reduced dims are innermost in memory a block
// sums one output's row (threads stride along it, then a block reduction); otherwise a block
// of 32 x 8 threads sums 32 neighbouring outputs, so a warp reads 32 neighbouring elements.
// Few, long rows are split into parts summed by separate blocks, then the parts are summed.
// max_rows: a warp per row, each lane scanning every 32nd element, then a shuffle reduction.
#include <algorithm>
#include <vector>

#include "tensor/cuda_kernels.h"
#include "tensor/cuda_launch.h"
#include "tensor/cuda_warp.h"
#include "tensor/view.h"

namespace ringgrad::kernels::cuda {
namespace {

using ringgrad::cuda::kThreads;
using ringgrad::cuda::kWarp;
using ringgrad::cuda::StridedIndex;

constexpr int kColumnRows = 8;             // threadIdx.y of the columns kernel
constexpr std::int64_t kTargetBlocks = 512;  // enough to fill a GPU several times over
constexpr std::int64_t kMaxParts = 1024;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Block (o, part): the sum of in(o, j) for j in the part's chunk, into out[o * parts + part].
template <typename T>
__global__ void sum_rows_kernel(T* out, const T* in, StridedIndex ia, std::int64_t m, std::int64_t chunk) {
  const std::int64_t o = blockIdx.x, begin = blockIdx.y * chunk, end = ::min(m, begin + chunk);
  T acc = 0;
  for (std::int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) acc += in[ia(o * m + j)];
  acc = ringgrad::cuda::block_sum(acc);
  if (threadIdx.x == 0) out[o * gridDim.y + blockIdx.y] = acc;
}

// Block (tile, part): threadIdx.x picks output tile * 32 + x, threadIdx.y every 8th j of the
// part's chunk; the 8 partial sums meet in shared memory. Writes out[part * outputs + o].
template <typename T>
__global__ void sum_columns_kernel(T* out, const T* in, StridedIndex ia, std::int64_t outputs, std::int64_t m,
                                   std::int64_t chunk) {
  __shared__ T partial[kColumnRows][kWarp];
  const std::int64_t o = blockIdx.x * std::int64_t{kWarp} + threadIdx.x;
  const std::int64_t begin = blockIdx.y * chunk, end = ::min(m, begin + chunk);
  T acc = 0;
  if (o < outputs) {
    for (std::int64_t j = begin + threadIdx.y; j < end; j += kColumnRows) acc += in[ia(o * m + j)];
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && o < outputs) {
    for (int r = 1; r < kColumnRows; ++r) acc += partial[r][threadIdx.x];
    out[blockIdx.y * outputs + o] = acc;
  }
}

StridedIndex matrix_index(std::int64_t rows, std::int64_t cols, std::int64_t row_stride, std::int64_t col_stride) {
  StridedIndex index;
  index.ndim = 2;
  index.sizes[0] = rows, index.sizes[1] = cols;
  index.strides[0] = row_stride, index.strides[1] = col_stride;
  return index;
}

// out[o] (contiguous) = sum over j < m of in[ia(o * m + j)]. `rows` picks the kernel.
template <typename T>
void sum_matrix(Device device, const T* in, StridedIndex ia, std::int64_t outputs, std::int64_t m, bool rows,
                T* out) {
  const auto stream = ringgrad::cuda::stream(device.index);
  if (rows) {
    const std::int64_t parts = std::clamp(std::min(ceil_div(kTargetBlocks, outputs), ceil_div(m, 2048)),
                                          std::int64_t{1}, kMaxParts);
    const std::int64_t chunk = ceil_div(m, parts);
    Tensor partial = parts > 1 ? Tensor::empty({outputs * parts}, dtype_of<T>(), device) : Tensor();
    T* target = parts > 1 ? partial.data<T>() : out;
    sum_rows_kernel<<<dim3(static_cast<unsigned>(outputs), static_cast<unsigned>(parts)), kThreads, 0, stream>>>(
        target, in, ia, m, chunk);
    RINGGRAD_CUDA_CHECK(cudaGetLastError());
    if (parts > 1) sum_matrix(device, static_cast<const T*>(target), matrix_index(outputs, parts, parts, 1), outputs, parts, true, out);
  } else {
    const std::int64_t tiles = ceil_div(outputs, kWarp);
    const std::int64_t parts = std::clamp(std::min(ceil_div(kTargetBlocks, tiles), ceil_div(m, 256)),
                                          std::int64_t{1}, kMaxParts);
    const std::int64_t chunk = ceil_div(m, parts);
    Tensor partial = parts > 1 ? Tensor::empty({parts * outputs}, dtype_of<T>(), device) : Tensor();
    T* target = parts > 1 ? partial.data<T>() : out;
    sum_columns_kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(parts)), dim3(kWarp, kColumnRows), 0,
                         stream>>>(target, in, ia, outputs, m, chunk);
    RINGGRAD_CUDA_CHECK(cudaGetLastError());
    // The parts' sums lie as [parts, outputs]: another column reduction.
    if (parts > 1) sum_matrix(device, static_cast<const T*>(target), matrix_index(outputs, parts, 1, outputs), outputs, parts, false, out);
  }
}

template <typename T>
__global__ void max_rows_kernel(const T* x, std::int64_t rows, std::int64_t n, T* values, std::int64_t* indices) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t warps_per_block = blockDim.x / kWarp;
  for (std::int64_t r = blockIdx.x * warps_per_block + threadIdx.x / kWarp; r < rows;
       r += std::int64_t{gridDim.x} * warps_per_block) {
    const T* row = x + r * n;
    std::int64_t best = lane < n ? lane : 0;
    for (std::int64_t j = lane + kWarp; j < n; j += kWarp) {
      if (row[j] > row[best]) best = j;  // strict: the first index wins a tie within a lane
    }
    T value = row[best];
    for (int step = kWarp / 2; step > 0; step /= 2) {
      const T other_value = __shfl_xor_sync(0xffffffffu, value, step);
      const std::int64_t other = __shfl_xor_sync(0xffffffffu, best, step);
      if (other_value > value || (other_value == value && other < best)) value = other_value, best = other;
    }
    if (lane == 0) values[r] = value, indices[r] = best;
  }
}

}  // namespace

Tensor sum_keepdim(const Tensor& a, const Shape& keep_shape) {
  Tensor out = Tensor::empty(keep_shape, a.dtype(), a.device());
  // Kept dims first, reduced dims last: output o is then the row-major sum of row o.
  std::vector<std::int64_t> kept, reduced;
  for (std::size_t d = 0; d < keep_shape.size(); ++d) {
    const bool is_reduced = keep_shape[d] == 1 && a.shape()[d] != 1;
    (is_reduced ? reduced : kept).push_back(static_cast<std::int64_t>(d));
  }
  std::int64_t m = 1;
  for (std::int64_t d : reduced) m *= a.shape()[static_cast<std::size_t>(d)];
  const std::int64_t outputs = out.numel();
  if (outputs == 0) return out;
  // The innermost dimension that moves decides which kernel reads memory in order.
  std::int64_t innermost = -1;
  for (std::int64_t d = a.dim() - 1; d >= 0 && innermost < 0; --d) {
    if (a.shape()[static_cast<std::size_t>(d)] != 1) innermost = d;
  }
  const bool rows = !reduced.empty() && reduced.back() == innermost && m >= kWarp;
  std::vector<std::int64_t> order = kept;
  order.insert(order.end(), reduced.begin(), reduced.end());
  const Tensor matrix = permute(a, order);
  ringgrad::cuda::DeviceGuard guard(a.device().index);
  dispatch_all(a.dtype(), [&]<typename T>() {
    sum_matrix(a.device(), ringgrad::cuda::base<const T>(matrix), ringgrad::cuda::index_of(matrix, "sum"), outputs, m,
               rows, out.data<T>());
  });
  return out;
}

void max_rows(const Tensor& rows, const Tensor& values, const Tensor& indices) {
  const std::int64_t n = rows.size(-1), count = values.numel();
  if (count == 0) return;
  const int device = rows.device().index;
  ringgrad::cuda::DeviceGuard guard(device);
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(count, kThreads / kWarp), 65535));
  dispatch_all(rows.dtype(), [&]<typename T>() {
    max_rows_kernel<<<blocks, kThreads, 0, ringgrad::cuda::stream(device)>>>(rows.data<T>(), count, n, values.data<T>(),
                                                                            indices.data<std::int64_t>());
  });
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ringgrad::kernels::cuda
