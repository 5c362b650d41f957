// The view kernels (view, reshape, transpose, permute, narrow, expand, squeeze, unsqueeze) that
// only rewrite shape, strides and offset, and the copies that materialise one: contiguous,
// clone, to_dtype, copy_.
#include "tensor/view.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "tensor/cuda_kernels.h"
#include "tensor/strided_loop.h"

namespace ringgrad::kernels {
namespace {

Shape infer_shape(Shape shape, std::int64_t count, const char* op) {
  auto unknown = std::find(shape.begin(), shape.end(), -1);
  if (unknown != shape.end()) {
    std::int64_t known = 1;
    for (std::int64_t s : shape) known *= s == -1 ? 1 : s;
    if (known == 0 || count % known != 0) {
      throw std::invalid_argument(fmt::format("{}: cannot infer -1 in shape {} for {} elements",
                                              op, shape_str(shape), count));
    }
    *unknown = count / known;
  }
  if (numel(shape) != count) {
    throw std::invalid_argument(fmt::format("{}: shape {} does not fit {} elements", op,
                                            shape_str(shape), count));
  }
  return shape;
}

}  // namespace

Tensor view(const Tensor& t, Shape shape) {
  if (!t.is_contiguous()) {
    throw std::invalid_argument("view: tensor of shape " + shape_str(t.shape()) +
                                " is not contiguous; use reshape");
  }
  shape = infer_shape(std::move(shape), t.numel(), "view");
  Strides strides = contiguous_strides(shape);
  return Tensor(t.storage(), std::move(shape), std::move(strides), t.offset(), t.dtype());
}

Tensor reshape(const Tensor& t, Shape shape) { return view(contiguous(t), std::move(shape)); }

Tensor transpose(const Tensor& t, std::int64_t d0, std::int64_t d1) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(t.dim()));
  for (std::size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<std::int64_t>(i);
  std::swap(dims[static_cast<std::size_t>(normalize_dim(d0, t.dim(), "transpose"))],
            dims[static_cast<std::size_t>(normalize_dim(d1, t.dim(), "transpose"))]);
  return permute(t, dims);
}

Tensor permute(const Tensor& t, const std::vector<std::int64_t>& dims) {
  if (static_cast<std::int64_t>(dims.size()) != t.dim()) {
    throw std::invalid_argument(fmt::format("permute: {} dims given for a {}-d tensor",
                                            dims.size(), t.dim()));
  }
  Shape shape(dims.size());
  Strides strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<std::size_t>(normalize_dim(dims[i], t.dim(), "permute"));
    if (seen[d]) throw std::invalid_argument("permute: dimension repeated");
    seen[d] = true;
    shape[i] = t.shape()[d];
    strides[i] = t.strides()[d];
  }
  return Tensor(t.storage(), std::move(shape), std::move(strides), t.offset(), t.dtype());
}

Tensor narrow(const Tensor& t, std::int64_t dim, std::int64_t start, std::int64_t length) {
  const auto d = static_cast<std::size_t>(normalize_dim(dim, t.dim(), "narrow"));
  if (start < 0 || length < 0 || start + length > t.shape()[d]) {
    throw std::out_of_range(fmt::format("narrow: [{}, {}) is outside dimension {} of size {}",
                                        start, start + length, dim, t.shape()[d]));
  }
  Shape shape = t.shape();
  shape[d] = length;
  return Tensor(t.storage(), std::move(shape), t.strides(), t.offset() + start * t.strides()[d],
                t.dtype());
}

Tensor expand(const Tensor& t, const Shape& shape) {
  if (shape.size() < t.shape().size()) {
    throw std::invalid_argument("expand: cannot expand " + shape_str(t.shape()) + " to fewer dims " +
                                shape_str(shape));
  }
  const std::size_t lead = shape.size() - t.shape().size();
  Strides strides(shape.size(), 0);
  for (std::size_t i = 0; i < t.shape().size(); ++i) {
    const std::int64_t from = t.shape()[i];
    if (from == shape[lead + i]) {
      strides[lead + i] = t.strides()[i];
    } else if (from != 1) {
      throw std::invalid_argument("expand: cannot expand " + shape_str(t.shape()) + " to " +
                                  shape_str(shape));
    }
  }
  return Tensor(t.storage(), shape, std::move(strides), t.offset(), t.dtype());
}

Tensor unsqueeze(const Tensor& t, std::int64_t dim) {
  const auto d = static_cast<std::size_t>(normalize_dim(dim, t.dim() + 1, "unsqueeze"));
  Shape shape = t.shape();
  Strides strides = t.strides();
  const std::int64_t stride = d < shape.size() ? shape[d] * strides[d] : 1;
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), 1);
  strides.insert(strides.begin() + static_cast<std::ptrdiff_t>(d), stride);
  return Tensor(t.storage(), std::move(shape), std::move(strides), t.offset(), t.dtype());
}

Tensor squeeze(const Tensor& t, std::int64_t dim) {
  const auto d = static_cast<std::size_t>(normalize_dim(dim, t.dim(), "squeeze"));
  if (t.shape()[d] != 1) {
    throw std::invalid_argument(fmt::format("squeeze: dimension {} of {} is not 1", dim,
                                            shape_str(t.shape())));
  }
  Shape shape = t.shape();
  Strides strides = t.strides();
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(d));
  return Tensor(t.storage(), std::move(shape), std::move(strides), t.offset(), t.dtype());
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor clone(const Tensor& t) { return to_dtype(t, t.dtype()); }

Tensor to_dtype(const Tensor& t, DType dtype) {
  Tensor out = Tensor::empty(t.shape(), dtype, t.device());
  copy_(out, t);
  return out;
}

void copy_(const Tensor& dst, const Tensor& src) {
  RINGGRAD_ON_CUDA(dst, cuda::copy_(dst, src));
  if (src.is_cuda()) return copy_(dst, src.cpu());
  const Tensor from = expand(src, dst.shape());
  dispatch_all(dst.dtype(), [&]<typename D>() {
    dispatch_all(from.dtype(), [&]<typename S>() {
      D* d = reinterpret_cast<D*>(dst.storage()->data());
      const S* s = reinterpret_cast<const S*>(from.storage()->data());
      for_each_row<2>(dst.shape(), {dst.strides(), from.strides()}, {dst.offset(), from.offset()},
                      [&](auto off, std::int64_t n, auto step) {
                        if constexpr (std::is_same_v<D, S>) {  // rows of one dtype: the C library's copy
                          if (step[0] == 1 && step[1] == 1) return void(std::copy_n(s + off[1], n, d + off[0]));
                        }
                        for (std::int64_t i = 0; i < n; ++i) {
                          d[off[0] + i * step[0]] = static_cast<D>(s[off[1] + i * step[1]]);
                        }
                      });
    });
  });
}

}  // namespace ringgrad::kernels
