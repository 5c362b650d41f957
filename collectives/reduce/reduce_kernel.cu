// CUDA reduction kernels: one grid-stride loop per (dtype, op), the device twin of
// reduce_kernel.cc. Memory-bound (about 3 bytes moved per element byte), so the plain loop is
// enough: the 16-bit floats are widened to float32, reduced, and rounded to nearest even.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "collectives/reduce/reduce_kernel_cuda.h"
#include "collectives/reduce/reduce_op.h"
#include "transport/cuda_ipc.h"

namespace ringgrad::collectives {
namespace {

// Storage types on the device: the 16-bit floats as their bit patterns.
struct Half16 {
  uint16_t bits;
};
struct BHalf16 {
  uint16_t bits;
};

template <typename T>
struct DeviceCompute {
  using type = T;
  __device__ static T load(T v) { return v; }
  __device__ static T store(T v) { return v; }
};
template <>
struct DeviceCompute<Half16> {
  using type = float;
  __device__ static float load(Half16 v) { return __half2float(__ushort_as_half(v.bits)); }
  __device__ static Half16 store(float v) { return Half16{__half_as_ushort(__float2half_rn(v))}; }
};
template <>
struct DeviceCompute<BHalf16> {
  using type = float;
  __device__ static float load(BHalf16 v) { return __bfloat162float(__ushort_as_bfloat16(v.bits)); }
  __device__ static BHalf16 store(float v) { return BHalf16{__bfloat16_as_ushort(__float2bfloat16_rn(v))}; }
};

template <typename T, ReduceOp Op>
__global__ void combine_kernel(T* dst, const T* a, const T* b, std::size_t n) {
  using C = DeviceCompute<T>;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = C::store(apply_op<Op>(C::load(a[i]), C::load(b[i])));
}

template <typename T>
__global__ void divide_kernel(T* data, std::size_t n, int world_size) {
  using C = DeviceCompute<T>;
  using V = typename C::type;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    data[i] = C::store(static_cast<V>(C::load(data[i]) / static_cast<V>(world_size)));
}

constexpr unsigned kThreads = 256;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 4096));
}

template <typename F>
void visit_device_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(std::type_identity<float>{});
    case DType::kFloat64: return f(std::type_identity<double>{});
    case DType::kFloat16: return f(std::type_identity<Half16>{});
    case DType::kBFloat16: return f(std::type_identity<BHalf16>{});
    case DType::kInt32: return f(std::type_identity<int32_t>{});
    case DType::kInt64: return f(std::type_identity<int64_t>{});
    case DType::kUInt8: return f(std::type_identity<uint8_t>{});
  }
}

template <typename T>
void launch_combine(T* d, const T* x, const T* y, std::size_t n, ReduceOp op, cudaStream_t s) {
  const unsigned g = blocks_for(n);
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: combine_kernel<T, ReduceOp::SUM><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case ReduceOp::PRODUCT: combine_kernel<T, ReduceOp::PRODUCT><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case ReduceOp::MIN: combine_kernel<T, ReduceOp::MIN><<<g, kThreads, 0, s>>>(d, x, y, n); break;
    case ReduceOp::MAX: combine_kernel<T, ReduceOp::MAX><<<g, kThreads, 0, s>>>(d, x, y, n); break;
  }
}

}  // namespace

void combine_on_device(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op,
                       cudaStream_t stream) {
  if (count == 0) return;
  visit_device_dtype(dtype, [&]<typename T>(std::type_identity<T>) {
    launch_combine(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), count, op, stream);
  });
  transport::cuda_check(cudaGetLastError(), "launching the reduction kernel");
}

void divide_for_avg_on_device(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size, cudaStream_t stream) {
  if (op != ReduceOp::AVG || world_size == 1 || count == 0) return;
  visit_device_dtype(dtype, [&]<typename T>(std::type_identity<T>) {
    divide_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, world_size);
  });
  transport::cuda_check(cudaGetLastError(), "launching the AVG division kernel");
}

}  // namespace ringgrad::collectives
