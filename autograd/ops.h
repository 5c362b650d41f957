// Differentiable operations: each computes its result with a tensor/ kernel and, when an
// input requires grad, records a node whose backward is written out next to the forward.
// Shapes, broadcasting and errors are those of the kernels (see tensor/*.h).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad {

// --- Element-wise (broadcasting) ------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
/// a ** exponent.
Tensor pow(const Tensor& a, double exponent);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
/// GELU, tanh approximation (GPT-2).
Tensor gelu(const Tensor& a);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return mul(a, 1.0 / b); }

// --- Reductions -----------------------------------------------------------------------------
/// Sum over `dims` (all when empty).
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
/// Mean over `dims` (all when empty).
Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
/// Largest values along `dim`; the gradient flows to the (first) maximum.
Tensor amax(const Tensor& a, std::int64_t dim, bool keepdim = false);

// --- Matrix product ---------------------------------------------------------------------------
/// a: [..., M, K] @ b: [..., K, N] -> [..., M, N], batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

// --- Views (share storage with the input) -----------------------------------------------------
Tensor view(const Tensor& a, const Shape& shape);
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1);
Tensor permute(const Tensor& a, const std::vector<std::int64_t>& dims);
Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length);
Tensor expand(const Tensor& a, const Shape& shape);
Tensor unsqueeze(const Tensor& a, std::int64_t dim);
Tensor squeeze(const Tensor& a, std::int64_t dim);
Tensor contiguous(const Tensor& a);

// --- Neural-network functions ----------------------------------------------------------------
/// Softmax along `dim`, numerically stable.
Tensor softmax(const Tensor& a, std::int64_t dim);
/// Log-softmax along `dim`, numerically stable.
Tensor log_softmax(const Tensor& a, std::int64_t dim);
/// Rows of weight [V, C] picked by int64 indices of any shape -> [*indices.shape, C].
Tensor embedding(const Tensor& weight, const Tensor& indices);
/// torch.gather along `dim`; the gradient is scattered back (repeated indices add up).
Tensor gather(const Tensor& a, std::int64_t dim, const Tensor& index);
/// Mean cross-entropy of logits [..., C] against int64 class targets [...] (the shapes
/// without C must match): -mean(log_softmax(logits)[target]). Fused: backward is
/// (softmax - one_hot(target)) / N. Throws std::out_of_range for a target outside [0, C).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);

}  // namespace ringgrad
