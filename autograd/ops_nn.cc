// The ops a network is made of: matrix products, softmax, embedding lookups, cross-entropy.
#include <fmt/format.h>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/index.h"
#include "tensor/matmul.h"
#include "tensor/reduce.h"
#include "tensor/softmax.h"
#include "tensor/view.h"

namespace ringgrad {

using autograd::record;
namespace k = kernels;

Tensor matmul(const Tensor& a, const Tensor& b) {
  // Only inputs that require grad get one: for a first layer, the data's gradient would be a
  // third of the layer's GEMM work, thrown away.
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record("matmul", k::matmul(a, b), {a, b}, [a = a.detach(), b = b.detach(), need_a, need_b](const Tensor& g) {
    // C = A B  =>  dA = dC B^T,  dB = A^T dC  (summed over broadcast batch dims).
    Tensor ga, gb;
    if (need_a) ga = k::sum_to(k::matmul(g, k::transpose(b, -1, -2)), a.shape());
    if (need_b && b.dim() == 2 && a.dim() > 2) {
      // A weight shared by every row of a batch: one GEMM over all rows at once.
      const std::int64_t kk = a.size(-1), n = b.size(-1);
      gb = k::matmul(k::transpose(k::reshape(a, {-1, kk}), 0, 1), k::reshape(g, {-1, n}));
    } else if (need_b) {
      gb = k::sum_to(k::matmul(k::transpose(a, -1, -2), g), b.shape());
    }
    return std::vector<Tensor>{ga, gb};
  });
}

Tensor softmax(const Tensor& a, std::int64_t dim) {
  Tensor y = k::softmax(a, dim);
  return record("softmax", y, {a}, [y = y.detach(), dim](const Tensor& g) {
    return std::vector<Tensor>{k::softmax_backward(g, y, dim)};
  });
}

Tensor log_softmax(const Tensor& a, std::int64_t dim) {
  Tensor y = k::log_softmax(a, dim);
  return record("log_softmax", y, {a}, [y = y.detach(), dim](const Tensor& g) {
    return std::vector<Tensor>{k::log_softmax_backward(g, y, dim)};
  });
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return record("embedding", k::index_select(weight, indices), {weight},
                [shape = weight.shape(), indices](const Tensor& g) {
                  Tensor grad = Tensor::zeros(shape, g.dtype(), g.device());
                  k::index_add_(grad, indices, g);
                  return std::vector<Tensor>{grad};
                });
}

Tensor gather(const Tensor& a, std::int64_t dim, const Tensor& index) {
  return record("gather", k::gather(a, dim, index), {a}, [shape = a.shape(), dim, index](const Tensor& g) {
    Tensor grad = Tensor::zeros(shape, g.dtype(), g.device());
    k::scatter_add_(grad, dim, index, g);
    return std::vector<Tensor>{grad};
  });
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  const std::int64_t classes = logits.dim() == 0 ? 0 : logits.size(-1);
  Shape expected(logits.shape().begin(), logits.shape().end() - (logits.dim() > 0 ? 1 : 0));
  if (logits.dim() < 1 || targets.shape() != expected || targets.dtype() != DType::Int64) {
    throw std::invalid_argument(fmt::format(
        "cross_entropy: logits {} need int64 targets of shape {}, got {} {}", shape_str(logits.shape()),
        shape_str(expected), dtype_name(targets.dtype()), shape_str(targets.shape())));
  }
  // Flatten to rows: [N, C] logits, [N, 1] targets.
  const Tensor rows = k::reshape(logits, {-1, classes});
  const Tensor picks = k::reshape(targets, {-1, 1});
  const Tensor log_probs = k::log_softmax(rows, -1);
  const std::int64_t n = rows.size(0);
  Tensor loss = k::mul(k::sum(k::gather(log_probs, 1, picks)), -1.0 / static_cast<double>(n));
  return record("cross_entropy", loss, {logits},
                [log_probs, picks, n, shape = logits.shape()](const Tensor& g) {
                  // d loss / d logits = (softmax - one_hot) / N, times the incoming scalar.
                  Tensor grad = k::exp(log_probs);
                  k::scatter_add_(grad, 1, picks, Tensor::full(picks.shape(), -1.0, grad.dtype(), grad.device()));
                  k::mul_(grad, g.item<double>() / static_cast<double>(n));
                  return std::vector<Tensor>{k::view(grad, shape)};
                });
}

}  // namespace ringgrad
