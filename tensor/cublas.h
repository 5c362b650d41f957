// GEMMs on a GPU through cuBLAS, for tensor/gemm.cc's gemm_batched. Plain C++ declarations (no
// CUDA headers); defined only in a CUDA build (cublas.cc, precision.cu).
#pragma once

#include <cstdint>

#include "tensor/gemm.h"

namespace ringgrad::cuda {

/// The batch of row-major GEMMs `g` and `batch` describe, on GPU `device` (g's pointers are its
/// device memory), queued on the tensor stream. float: float32 inputs and accumulation (no TF32),
/// or at bf16 matmul precision bf16 copies of the operands with float32 accumulation and output;
/// double: float64. Throws std::runtime_error naming the cuBLAS status on failure.
template <typename T>
void gemm_batched(int device, const kernels::GemmArgs<T>& g, const kernels::GemmBatch& batch);

/// The batch `g` and `batch` describe at bf16 matmul precision, its operands already converted:
/// `a` and `b` hold the bf16 bits of what g.a and g.b would address, laid out alike (g.a and g.b
/// are not read). float32 accumulation and output to g.c. For operands converted once and read
/// by several calls (attention.cu); gemm_batched converts its own for each call.
void gemm_batched_bfloat16(int device, const kernels::GemmArgs<float>& g, const std::uint16_t* a,
                           const std::uint16_t* b, const kernels::GemmBatch& batch);

/// dst[i] = the bits of the bfloat16 nearest src[i] (precision.h's bfloat16_bits), i < n, both
/// in GPU `device`'s memory; queued on the tensor stream.
void to_bfloat16(const float* src, std::uint16_t* dst, std::int64_t n, int device);

}  // namespace ringgrad::cuda
