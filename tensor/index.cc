// index_select / index_add_ (rows of a table, for embeddings) and gather / scatter_add_ (one
// element per row along a dimension, for cross-entropy), each index checked against its bound.
#include "tensor/index.h"

#include <fmt/format.h>

#include <cstring>

#include "tensor/cuda_kernels.h"
#include "tensor/strided_loop.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

void check_index(const Tensor& index, const char* op) {
  if (index.dtype() != DType::Int64) {
    throw std::invalid_argument(fmt::format("{}: index must be int64, got {}", op, dtype_name(index.dtype())));
  }
}

std::int64_t checked(std::int64_t i, std::int64_t size, const char* op) {
  if (i < 0 || i >= size) {
    throw std::out_of_range(fmt::format("{}: index {} is out of range for size {}", op, i, size));
  }
  return i;
}

// Checks gather/scatter_add_'s index against `other` (the input or destination) and returns
// `dim` normalised.
std::int64_t check_along_dim(const Tensor& other, std::int64_t dim, const Tensor& index, const char* op) {
  check_index(index, op);
  const auto d = static_cast<std::size_t>(normalize_dim(dim, other.dim(), op));
  if (index.dim() != other.dim()) {
    throw std::invalid_argument(fmt::format("{}: index {} and input {} differ in rank", op,
                                            shape_str(index.shape()), shape_str(other.shape())));
  }
  for (std::size_t i = 0; i < index.shape().size(); ++i) {
    if (i != d && index.shape()[i] > other.shape()[i]) {
      throw std::invalid_argument(fmt::format("{}: index {} is larger than input {} in dim {}", op,
                                              shape_str(index.shape()), shape_str(other.shape()), i));
    }
  }
  return static_cast<std::int64_t>(d);
}

// Calls fn(position_in_other, position_in_index_tensor_order) for gather/scatter on the CPU:
// `other` is walked with index's shape except along dim `d`, where the index value picks.
template <typename Fn>
void along_dim(const Tensor& other, std::size_t d, const Tensor& index, const char* op, Fn fn) {
  Strides walk = other.strides();
  walk[d] = 0;  // along `dim` the index value decides, not the loop position
  const std::int64_t* idx = reinterpret_cast<const std::int64_t*>(index.storage()->data());
  std::int64_t pos = 0;
  for_each_row<2>(index.shape(), {walk, index.strides()}, {other.offset(), index.offset()},
                  [&](auto off, std::int64_t n, auto step) {
                    for (std::int64_t j = 0; j < n; ++j) {
                      const std::int64_t k = checked(idx[off[1] + j * step[1]], other.shape()[d], op);
                      fn(off[0] + j * step[0] + k * other.strides()[d], pos++);
                    }
                  });
}

}  // namespace

Tensor index_select(const Tensor& table, const Tensor& index) {
  check_index(index, "index_select");
  RINGGRAD_ON_CUDA(table.is_cuda() ? table : index, cuda::index_select(table, index));
  const Tensor rows = contiguous(table);
  const Tensor idx = contiguous(index);
  Shape shape = index.shape();
  shape.insert(shape.end(), table.shape().begin() + 1, table.shape().end());
  Tensor out = Tensor::zeros(shape, table.dtype());
  const std::int64_t row_bytes =
      (table.size(0) == 0 ? 0 : table.numel() / table.size(0)) * static_cast<std::int64_t>(dtype_size(table.dtype()));
  const auto* src = static_cast<const std::byte*>(rows.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const std::int64_t* ids = idx.data<std::int64_t>();
  for (std::int64_t i = 0; i < idx.numel(); ++i) {
    const std::int64_t r = checked(ids[i], table.size(0), "index_select");
    std::memcpy(dst + i * row_bytes, src + r * row_bytes, static_cast<std::size_t>(row_bytes));
  }
  return out;
}

void index_add_(const Tensor& dst, const Tensor& index, const Tensor& src) {
  check_index(index, "index_add_");
  if (!dst.is_contiguous()) throw std::invalid_argument("index_add_: destination must be contiguous");
  const Tensor idx = contiguous(index);
  const Tensor s = contiguous(src);
  const std::int64_t row = dst.size(0) == 0 ? 0 : dst.numel() / dst.size(0);
  if (s.numel() != idx.numel() * row) {
    throw std::invalid_argument(fmt::format("index_add_: source {} does not match {} rows of {}",
                                            shape_str(src.shape()), idx.numel(), shape_str(dst.shape())));
  }
  RINGGRAD_ON_CUDA(dst.is_cuda() ? dst : index, cuda::index_add_(dst, idx, s));
  dispatch_floating(dst.dtype(), "index_add_", [&]<typename T>() {
    T* d = dst.data<T>();
    const T* x = s.data<T>();
    const std::int64_t* ids = idx.data<std::int64_t>();
    for (std::int64_t i = 0; i < idx.numel(); ++i) {
      T* out_row = d + checked(ids[i], dst.size(0), "index_add_") * row;
      for (std::int64_t j = 0; j < row; ++j) out_row[j] += x[i * row + j];
    }
  });
}

Tensor gather(const Tensor& input, std::int64_t dim, const Tensor& index) {
  const std::int64_t d = check_along_dim(input, dim, index, "gather");
  RINGGRAD_ON_CUDA(input.is_cuda() ? input : index, cuda::gather(input, d, index));
  Tensor out = Tensor::zeros(index.shape(), input.dtype());
  dispatch_all(input.dtype(), [&]<typename T>() {
    const T* in = reinterpret_cast<const T*>(input.storage()->data());
    T* o = out.data<T>();
    along_dim(input, static_cast<std::size_t>(d), index, "gather", [&](std::int64_t at, std::int64_t pos) { o[pos] = in[at]; });
  });
  return out;
}

void scatter_add_(const Tensor& dst, std::int64_t dim, const Tensor& index, const Tensor& src) {
  if (src.shape() != index.shape()) {
    throw std::invalid_argument(fmt::format("scatter_add_: source {} and index {} differ",
                                            shape_str(src.shape()), shape_str(index.shape())));
  }
  const std::int64_t d = check_along_dim(dst, dim, index, "scatter_add_");
  RINGGRAD_ON_CUDA(dst.is_cuda() ? dst : index, cuda::scatter_add_(dst, d, index, src));
  const Tensor s = contiguous(src);
  dispatch_all(dst.dtype(), [&]<typename T>() {
    T* out = reinterpret_cast<T*>(dst.storage()->data());
    const T* x = s.data<T>();
    along_dim(dst, static_cast<std::size_t>(d), index, "scatter_add_",
              [&](std::int64_t at, std::int64_t pos) { out[at] += x[pos]; });
  });
}

}  // namespace ringgrad::kernels
