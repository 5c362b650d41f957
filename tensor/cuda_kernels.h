// The CUDA twins of the tensor kernels. Each is defined in a .cu file beside its CPU twin
// (view.cu beside view.cc, ...) and has the CPU twin's contract, for tensors on one GPU.
// A CPU kernel hands a GPU tensor to its twin with RINGGRAD_ON_CUDA; without CUDA support
// no tensor can live on a GPU (Storage throws), so the branch is compiled out.
#pragma once

#include "tensor/tensor.h"

#if RINGGRAD_HAVE_CUDA
/// `if (t is on a GPU) return call;` at the top of a CPU kernel.
#define RINGGRAD_ON_CUDA(t, call) \
  if ((t).is_cuda()) return call
#else
#define RINGGRAD_ON_CUDA(t, call) static_cast<void>(0)
#endif

namespace ringgrad::kernels::cuda {

/// Throws std::invalid_argument "op: tensors on cuda:0 and cpu" unless all share a device.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);

// --- worker A: view.cu, elementwise.cu, reduce.cu, softmax.cu, index.cu, random.cu, dropout.cu
void copy_(const Tensor& dst, const Tensor& src);
void fill_(const Tensor& dst, double value);
// --- end of worker A

// --- worker B: matmul, linear.cu, layer_norm.cu, attention.cu
// --- end of worker B

}  // namespace ringgrad::kernels::cuda
