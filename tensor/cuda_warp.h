// Reductions across the threads of a warp (5 shuffle steps, no shared memory) and of a block
// (warps reduce, then one warp reduces the warps' results through 32 slots of shared memory).
// Every thread gets the result. Included by .cu files.
#pragma once

namespace ringgrad::cuda {

constexpr int kWarp = 32;

template <typename T>
__device__ T warp_sum(T v) {
  for (int step = kWarp / 2; step > 0; step /= 2) v += __shfl_xor_sync(0xffffffffu, v, step);
  return v;
}

template <typename T>
__device__ T warp_max(T v) {
  for (int step = kWarp / 2; step > 0; step /= 2) {
    const T other = __shfl_xor_sync(0xffffffffu, v, step);
    v = other > v ? other : v;
  }
  return v;
}

/// Sum over the block; blockDim.x must be a multiple of 32, and every thread must call it.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T partial[kWarp];
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  v = warp_sum(v);
  __syncthreads();  // a previous call may still be reading `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x) / kWarp ? partial[lane] : T(0);
  return warp_sum(v);
}

}  // namespace ringgrad::cuda
