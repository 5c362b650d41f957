// Sums, means and maxima over dimensions: one strided loop writes into an output that has
// stride 0 along the reduced dims (a float row summed to one value accumulates in double), and
// sum_to undoes broadcasting.
#include "tensor/reduce.h"

#include <fmt/format.h>

#include <type_traits>

#include "tensor/cuda_kernels.h"
#include "tensor/elementwise.h"
#include "tensor/strided_loop.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

// Sums `a` into a tensor of `keep_shape` (same rank as a, reduced dims of size 1). The output
// is viewed with stride 0 along reduced dims, so one strided loop does every case.
Tensor sum_keepdim(const Tensor& a, const Shape& keep_shape) {
  RINGGRAD_ON_CUDA(a, cuda::sum_keepdim(a, keep_shape));
  Tensor out = Tensor::zeros(keep_shape, a.dtype());
  const Tensor spread = expand(out, a.shape());
  dispatch_all(a.dtype(), [&]<typename T>() {
    // Wider accumulator along a row that reduces to one element (float -> double).
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
    T* o = reinterpret_cast<T*>(out.storage()->data());
    const T* x = reinterpret_cast<const T*>(a.storage()->data());
    for_each_row<2>(a.shape(), {spread.strides(), a.strides()}, {0, a.offset()},
                    [&](auto off, std::int64_t n, auto step) {
                      if (step[0] == 0) {
                        Acc acc = 0;
                        for (std::int64_t j = 0; j < n; ++j) acc += x[off[1] + j * step[1]];
                        o[off[0]] += static_cast<T>(acc);
                      } else {
                        for (std::int64_t j = 0; j < n; ++j) {
                          o[off[0] + j * step[0]] += x[off[1] + j * step[1]];
                        }
                      }
                    });
  });
  return out;
}

// Per row of contiguous rows [R, n]: the largest value and its first index, into values and
// indices (contiguous, R elements each).
void max_rows(const Tensor& rows, const Tensor& values, const Tensor& indices) {
  RINGGRAD_ON_CUDA(rows, cuda::max_rows(rows, values, indices));
  const std::int64_t n = rows.size(-1);
  dispatch_all(rows.dtype(), [&]<typename T>() {
    const T* x = rows.data<T>();
    T* v = values.data<T>();
    std::int64_t* idx = indices.data<std::int64_t>();
    for (std::int64_t r = 0; r < values.numel(); ++r) {
      const T* row = x + r * n;
      std::int64_t best = 0;
      for (std::int64_t j = 1; j < n; ++j) {
        if (row[j] > row[best]) best = j;
      }
      v[r] = row[best];
      idx[r] = best;
    }
  });
}

// Shape with the reduced dims set to 1; `dims` empty means every dim.
Shape keepdim_shape(const Tensor& a, const std::vector<std::int64_t>& dims, const char* op) {
  Shape shape = a.shape();
  if (dims.empty()) {
    for (auto& s : shape) s = 1;
  }
  for (std::int64_t d : dims) shape[static_cast<std::size_t>(normalize_dim(d, a.dim(), op))] = 1;
  return shape;
}

// Drops the size-1 dims that were reduced.
Shape squeeze_reduced(const Tensor& a, const std::vector<std::int64_t>& dims, const char* op) {
  std::vector<bool> reduced(static_cast<std::size_t>(a.dim()), dims.empty());
  for (std::int64_t d : dims) reduced[static_cast<std::size_t>(normalize_dim(d, a.dim(), op))] = true;
  Shape shape;
  for (std::size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) shape.push_back(a.shape()[i]);
  }
  return shape;
}

}  // namespace

Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  Tensor out = sum_keepdim(a, keepdim_shape(a, dims, "sum"));
  return keepdim ? out : view(out, squeeze_reduced(a, dims, "sum"));
}

Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  Tensor out = sum(a, dims, keepdim);
  const std::int64_t count = a.numel() / std::max<std::int64_t>(out.numel(), 1);
  mul_(out, 1.0 / static_cast<double>(count));
  return out;
}

std::pair<Tensor, Tensor> max(const Tensor& a, std::int64_t dim, bool keepdim) {
  const std::int64_t d = normalize_dim(dim, a.dim(), "max");
  if (a.size(d) == 0) throw std::invalid_argument("max: reduction over an empty dimension");
  // Move `dim` last, keeping the others in order, and make rows contiguous: each row is then
  // one reduction, and rows come in the output's order.
  std::vector<std::int64_t> order;
  for (std::int64_t i = 0; i < a.dim(); ++i) {
    if (i != d) order.push_back(i);
  }
  order.push_back(d);
  const Tensor rows = contiguous(permute(a, order));
  Shape keep = a.shape();
  keep[static_cast<std::size_t>(d)] = 1;
  Tensor values = Tensor::empty(keep, a.dtype(), a.device());
  Tensor indices = Tensor::empty(keep, DType::Int64, a.device());
  max_rows(rows, values, indices);
  if (!keepdim) return {squeeze(values, d), squeeze(indices, d)};
  return {values, indices};
}

Tensor argmax(const Tensor& a, std::int64_t dim, bool keepdim) { return max(a, dim, keepdim).second; }

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  // Leading dims that broadcasting added are summed away entirely; dims of size 1 in `shape`
  // are summed with keepdim.
  const std::size_t lead = a.shape().size() - shape.size();
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < a.shape().size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && a.shape()[i] != 1)) dims.push_back(static_cast<std::int64_t>(i));
  }
  Tensor out = sum_keepdim(a, keepdim_shape(a, dims, "sum_to"));
  return view(out, shape);
}

}  // namespace ringgrad::kernels
