// Views and reductions. A view's backward puts the gradient back into the input's layout;
// a reduction's backward spreads it over the elements that were reduced.
#include <algorithm>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/index.h"
#include "tensor/reduce.h"
#include "tensor/view.h"

namespace ringgrad {

using autograd::record;
namespace k = kernels;

namespace {
// The gradient of any op that only relabels elements: reshape it back to the input's shape.
autograd::BackwardFn reshape_back(const Shape& shape) {
  return [shape](const Tensor& g) { return std::vector<Tensor>{k::reshape(g, shape)}; };
}

// Shape `a` has when `dims` are reduced with keepdim.
Shape keepdim_shape(const Tensor& a, const std::vector<std::int64_t>& dims) {
  Shape s = a.shape();
  if (dims.empty()) std::fill(s.begin(), s.end(), 1);
  for (std::int64_t d : dims) s[static_cast<std::size_t>(normalize_dim(d, a.dim(), "sum"))] = 1;
  return s;
}
}  // namespace

Tensor view(const Tensor& a, const Shape& shape) {
  return record("view", k::view(a, shape), {a}, reshape_back(a.shape()));
}

Tensor reshape(const Tensor& a, const Shape& shape) {
  return record("reshape", k::reshape(a, shape), {a}, reshape_back(a.shape()));
}

Tensor unsqueeze(const Tensor& a, std::int64_t dim) {
  return record("unsqueeze", k::unsqueeze(a, dim), {a}, reshape_back(a.shape()));
}

Tensor squeeze(const Tensor& a, std::int64_t dim) {
  return record("squeeze", k::squeeze(a, dim), {a}, reshape_back(a.shape()));
}

Tensor contiguous(const Tensor& a) {
  return record("contiguous", k::contiguous(a), {a}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1) {
  return record("transpose", k::transpose(a, d0, d1), {a}, [d0, d1](const Tensor& g) {
    return std::vector<Tensor>{k::transpose(g, d0, d1)};
  });
}

Tensor permute(const Tensor& a, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> inverse(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    inverse[static_cast<std::size_t>(normalize_dim(dims[i], a.dim(), "permute"))] = static_cast<std::int64_t>(i);
  }
  return record("permute", k::permute(a, dims), {a}, [inverse](const Tensor& g) {
    return std::vector<Tensor>{k::permute(g, inverse)};
  });
}

Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length) {
  return record("narrow", k::narrow(a, dim, start, length), {a}, [shape = a.shape(), dim, start, length](const Tensor& g) {
    Tensor full = Tensor::zeros(shape, g.dtype(), g.device());
    k::copy_(k::narrow(full, dim, start, length), g);
    return std::vector<Tensor>{full};
  });
}

Tensor expand(const Tensor& a, const Shape& shape) {
  return record("expand", k::expand(a, shape), {a}, [shape = a.shape()](const Tensor& g) {
    return std::vector<Tensor>{k::sum_to(g, shape)};
  });
}

Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  return record("sum", k::sum(a, dims, keepdim), {a}, [shape = a.shape(), keep = keepdim_shape(a, dims)](const Tensor& g) {
    return std::vector<Tensor>{k::contiguous(k::expand(k::reshape(g, keep), shape))};
  });
}

Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  const Tensor s = sum(a, dims, keepdim);
  return mul(s, static_cast<double>(s.numel()) / static_cast<double>(std::max<std::int64_t>(a.numel(), 1)));
}

Tensor amax(const Tensor& a, std::int64_t dim, bool keepdim) {
  auto [values, indices] = k::max(a, dim, true);
  Tensor out = keepdim ? values : k::squeeze(values, dim);
  return record("amax", out, {a}, [shape = a.shape(), indices, dim](const Tensor& g) {
    Tensor grad = Tensor::zeros(shape, g.dtype(), g.device());
    k::scatter_add_(grad, dim, indices, k::reshape(g, indices.shape()));
    return std::vector<Tensor>{grad};
  });
}

}  // namespace ringgrad
