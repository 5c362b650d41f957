// Reduction kernels on device memory: combine and divide_for_avg of reduce_kernel.h as CUDA kernels
// enqueued on a stream (one grid-stride kernel per (dtype, op); float16/bfloat16 in float32,
// integer SUM/PRODUCT wrapping, as on the host). Memory-bound: 3 bytes moved per byte reduced.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "collectives/dtype.h"

namespace ringgrad::collectives {

/// Enqueues dst[i] = a[i] op b[i], i < count, on `stream` (device pointers; dst may equal a or
/// b). Throws transport::CudaError when the launch fails.
void combine_on_device(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op,
                       cudaStream_t stream);

/// Enqueues data[i] /= world_size for AVG on `stream`; nothing for other ops.
void divide_for_avg_on_device(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size, cudaStream_t stream);

}  // namespace ringgrad::collectives
