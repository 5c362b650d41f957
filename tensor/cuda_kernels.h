// The CUDA twins of the tensor kernels. Each is defined in a .cu file beside its CPU twin
// (view.cu beside view.cc, ...) and has the CPU twin's contract, for tensors on one GPU.
// A CPU kernel hands a GPU tensor to its twin with RINGGRAD_ON_CUDA; without CUDA support
// no tensor can live on a GPU (Storage throws), so the branch is compiled out.
#pragma once

#include "tensor/random.h"
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

// --- view.cu, elementwise.cu, reduce.cu, softmax.cu, index.cu, dropout.cu
// The CPU kernel checks shapes and dtypes before it hands over; the twins check devices.
// (random.h fills a GPU tensor on the CPU and copies it over: it has no twin.)
void copy_(const Tensor& dst, const Tensor& src);
void fill_(const Tensor& dst, double value);

/// The element-wise ops of elementwise.h, named for the one generic CUDA launcher.
enum class UnaryOp { neg, exp, log, sqrt, tanh, sigmoid, relu, gelu };
enum class BinaryOp { add, sub, mul, div, pow, eq, relu_backward, gelu_backward };
/// op(a) into a new contiguous tensor; float32/float64 (else std::invalid_argument naming `name`).
Tensor unary(UnaryOp op, const Tensor& a, const char* name);
/// op(a, b) with broadcasting into a new contiguous tensor; a and b share a dtype.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name);
void add_(const Tensor& dst, const Tensor& src, double alpha);
void mul_(const Tensor& dst, double value);

/// Sums `a` into a new tensor of `keep_shape` (a's rank, reduced dims of size 1).
Tensor sum_keepdim(const Tensor& a, const Shape& keep_shape);
/// Per row of contiguous `rows` [R, n]: the largest value into values[r] and its first index
/// into indices[r] (contiguous, R elements each).
void max_rows(const Tensor& rows, const Tensor& values, const Tensor& indices);

/// The row kernels of softmax.h, over contiguous [R, n] rows (`y` undefined for the forward ones).
enum class SoftmaxOp { softmax, log_softmax, softmax_backward, log_softmax_backward };
void softmax_rows(SoftmaxOp op, const Tensor& x, const Tensor& y, const Tensor& out, const char* name);

Tensor index_select(const Tensor& table, const Tensor& index);
void index_add_(const Tensor& dst, const Tensor& index, const Tensor& src);
/// gather / scatter_add_ along dimension `dim` (already normalised, >= 0).
Tensor gather(const Tensor& input, std::int64_t dim, const Tensor& index);
void scatter_add_(const Tensor& dst, std::int64_t dim, const Tensor& index, const Tensor& src);

Tensor dropout_mask(const Shape& shape, double p, DType dtype, Generator& gen, Device device);

// --- linear.cu, layer_norm.cu, attention.cu (matmul's and linear's GEMMs go to
// cuBLAS through gemm_batched, tensor/gemm.h). The CPU kernel checks shapes, dtypes and
// devices and allocates the outputs on the inputs' GPU; the twin fills them. Inputs contiguous.
/// db [out] (zero-filled) = the column sums of dy [rows, out]: linear's bias gradient.
void linear_bias_backward(const Tensor& dy, std::int64_t rows, std::int64_t out_features, const Tensor& db);
/// layer_norm into y (x's shape), mean and rstd [rows]; bias may be undefined.
void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                const Tensor& mean, const Tensor& rstd);
/// layer_norm_backward into dx (x's shape), dweight and dbias [C] (dbias may be undefined).
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dweight, const Tensor& dbias);
/// causal_attention of qkv [B, T, 3C] into y [B, T, C] and att [B, H, T, T].
void causal_attention(const Tensor& qkv, std::int64_t n_head, const Tensor& y, const Tensor& att);
/// causal_attention_backward into dqkv [B, T, 3C].
void causal_attention_backward(const Tensor& dy, const Tensor& qkv, const Tensor& att, std::int64_t n_head,
                               const Tensor& dqkv);

}  // namespace ringgrad::kernels::cuda
