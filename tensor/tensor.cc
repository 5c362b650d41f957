// Tensor's factories, metadata checks, element access (item, to_vector, raw pointers at the
// view's offset), moves between devices and the autograd fields it carries.
#include "tensor/tensor.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "tensor/cuda_runtime.h"
#include "tensor/elementwise.h"
#include "tensor/strided_loop.h"
#include "tensor/view.h"

namespace ringgrad {

namespace {
void check_sizes(const Shape& shape) {
  for (std::int64_t s : shape)
    if (s < 0) throw std::invalid_argument("Tensor: negative size in shape " + shape_str(shape));
}
}  // namespace

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Strides strides,
               std::int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {
  check_sizes(shape_);
}

namespace {
// A contiguous tensor of `shape` on `device` (a GPU that is not there is reported by Storage).
// The sizes are checked before the bytes are counted: -1 rows would ask for 2^64 bytes.
Tensor make_tensor(const Shape& shape, DType dtype, Device device, bool zeroed) {
  check_sizes(shape);
  const auto bytes = static_cast<std::size_t>(ringgrad::numel(shape)) * dtype_size(dtype);
  return Tensor(std::make_shared<Storage>(bytes, zeroed, device), shape, contiguous_strides(shape), 0, dtype);
}
}  // namespace

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return make_tensor(shape, dtype, device, true); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) { return make_tensor(shape, dtype, device, false); }

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  kernels::fill_(t, value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

Tensor Tensor::arange(std::int64_t n, DType dtype) {
  Tensor t = zeros({n}, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(i);
  });
  return t;
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != ringgrad::numel(shape)) {
    throw std::invalid_argument(fmt::format("Tensor::from_vector: {} values for shape {}",
                                            values.size(), shape_str(shape)));
  }
  Tensor t = zeros(shape, dtype_of<T>());
  if (!values.empty()) std::memcpy(t.data<T>(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<std::int64_t>&, const Shape&);

std::int64_t Tensor::size(std::int64_t d) const {
  return shape_[static_cast<std::size_t>(normalize_dim(d, dim(), "Tensor::size"))];
}

bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor Tensor::to(Device target) const {
  if (device() == target) return *this;
  const Tensor source = kernels::contiguous(*this);
  Tensor out = empty(shape_, dtype_, target);
  // One side is a GPU (the devices differ); cuda::copy moves bytes either way.
  cuda::copy(out.raw_data(), source.raw_data(), static_cast<std::size_t>(numel()) * dtype_size(dtype_),
             (target.is_cuda() ? target : device()).index);
  return out;
}

void* Tensor::raw_data() const {
  return storage_->data() + static_cast<std::size_t>(offset_) * dtype_size(dtype_);
}

template <typename T>
T Tensor::item() const {
  if (numel() != 1) {
    throw std::invalid_argument("Tensor::item: tensor of shape " + shape_str(shape_) +
                                " has more than one element");
  }
  if (is_cuda()) return cpu().item<T>();
  return dispatch_all(dtype_, [&]<typename S>() { return static_cast<T>(*data<S>()); });
}
template float Tensor::item() const;
template double Tensor::item() const;
template std::int64_t Tensor::item() const;

template <typename T>
std::vector<T> Tensor::to_vector() const {
  if (is_cuda()) return cpu().to_vector<T>();
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(numel()));
  dispatch_all(dtype_, [&]<typename S>() {
    const S* base = reinterpret_cast<const S*>(storage_->data());
    for_each_row<1>(shape_, {strides_}, {offset_}, [&](auto off, std::int64_t n, auto step) {
      for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<T>(base[off[0] + i * step[0]]));
    });
  });
  return out;
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<std::int64_t> Tensor::to_vector() const;

bool Tensor::requires_grad() const { return autograd_ && autograd_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  if (requires_grad && dtype_ == DType::Int64) {
    throw std::invalid_argument("set_requires_grad: only floating-point tensors can require grad");
  }
  autograd_meta().requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const { return autograd_ ? autograd_->grad : Tensor(); }

void Tensor::set_grad(const Tensor& grad) { autograd_meta().grad = grad; }

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  return autograd_ ? autograd_->grad_fn : nullptr;
}

Tensor Tensor::detach() const { return Tensor(storage_, shape_, strides_, offset_, dtype_); }

AutogradMeta& Tensor::autograd_meta() {
  if (!autograd_) autograd_ = std::make_shared<AutogradMeta>();
  return *autograd_;
}

}  // namespace ringgrad
