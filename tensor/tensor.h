// Tensor: a strided view (shape, strides, offset, dtype) onto shared Storage.
// Copying a Tensor copies the handle, not the data: both handles see the same elements,
// the same gradient and the same autograd history, as in PyTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace ringgrad {

namespace autograd {
class Node;
}

struct AutogradMeta;

class Tensor {
 public:
  /// An undefined tensor (no storage); defined() is false.
  Tensor() = default;
  /// A view of `storage`: element i_0..i_n lives at offset + sum(i_k * strides[k]) elements.
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Strides strides, std::int64_t offset,
         DType dtype);

  // --- Factories (contiguous; on the CPU unless a device is given) ------------------------
  /// Zero-filled tensor of `shape`.
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU);
  /// Uninitialised tensor of `shape` (torch.empty), for results a kernel writes in full.
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU);
  static Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = kCPU);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::Float32, Device device = kCPU);
  /// A 0-d tensor holding `value`.
  static Tensor scalar(double value, DType dtype = DType::Float32, Device device = kCPU);
  /// [0, 1, ..., n-1].
  static Tensor arange(std::int64_t n, DType dtype = DType::Int64);
  /// Copies `values` (row-major) into a new CPU tensor of `shape`; throws if the counts differ.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);

  // --- Metadata -----------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  std::int64_t offset() const { return offset_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  /// Size of dimension `d`; negative `d` counts from the end.
  std::int64_t size(std::int64_t d) const;
  std::int64_t numel() const { return ringgrad::numel(shape_); }
  /// True when the elements are laid out row-major with no gaps.
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  /// Where the elements live (the CPU for an undefined tensor).
  Device device() const { return storage_ ? storage_->device() : kCPU; }
  bool is_cuda() const { return device().is_cuda(); }

  /// A contiguous copy on `device` with no autograd history, or this tensor itself when it is
  /// already there (PyTorch's to(device)). Throws std::runtime_error when the GPU is unusable.
  Tensor to(Device device) const;
  Tensor cpu() const { return to(kCPU); }

  // --- Data access --------------------------------------------------------------------------
  /// Pointer to the first element (a device pointer for a GPU tensor); throws if T does not
  /// match dtype().
  template <typename T>
  T* data() const;
  void* raw_data() const;
  /// The value of a one-element tensor, converted to T (copied from the GPU if need be).
  template <typename T>
  T item() const;
  /// All elements in row-major order, converted to T (for tests and printing; any device).
  template <typename T>
  std::vector<T> to_vector() const;

  // --- Autograd state (filled in by autograd/) ----------------------------------------------
  bool requires_grad() const;
  /// Marks a leaf tensor as a parameter whose gradient backward() accumulates into grad().
  Tensor& set_requires_grad(bool requires_grad);
  /// Accumulated gradient; undefined until a backward pass reaches this tensor.
  Tensor grad() const;
  void set_grad(const Tensor& grad);
  /// The operation that produced this tensor, or null for a leaf.
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// A leaf is a tensor no recorded operation produced (a parameter, an input).
  bool is_leaf() const { return grad_fn() == nullptr; }
  /// The same data with no autograd history (PyTorch's detach()).
  Tensor detach() const;
  /// The autograd record of this handle, created on first use. Shared by copies made after.
  AutogradMeta& autograd_meta();
  AutogradMeta* autograd_meta_if_any() const { return autograd_.get(); }

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Strides strides_;
  std::int64_t offset_ = 0;
  DType dtype_ = DType::Float32;
  std::shared_ptr<AutogradMeta> autograd_;
};

/// A post-accumulate-grad hook and the id its handle removes it by (autograd/hooks.h).
struct GradHook {
  std::uint64_t id;
  std::function<void(Tensor&)> fn;
};

/// What autograd knows about a tensor. Defined here so Tensor can hold it; autograd/ fills it.
struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  /// The node that computed this tensor (null for leaves).
  std::shared_ptr<autograd::Node> grad_fn;
  /// A leaf's gradient sink in the current graph; weak so the graph owns it.
  std::weak_ptr<autograd::Node> grad_accumulator;
  /// Called after this leaf's gradient is fully accumulated in a backward pass, in the order
  /// they were added. Only autograd::register_post_accumulate_grad_hook adds one; the handle it
  /// returns removes it. Shared with those handles, so that one may outlive the tensor; null
  /// until the first hook. DDP starts communication here.
  std::shared_ptr<std::vector<GradHook>> post_accumulate_grad_hooks;
};

template <typename T>
T* Tensor::data() const {
  if (dtype_of<T>() != dtype_) {
    throw std::invalid_argument("Tensor::data: tensor is " + dtype_name(dtype_) +
                                ", requested " + dtype_name(dtype_of<T>()));
  }
  return reinterpret_cast<T*>(storage_->data()) + offset_;
}

}  // namespace ringgrad
