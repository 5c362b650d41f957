// Storage: one reference-counted block of memory that any number of tensor views share.
#pragma once

#include <cstddef>
#include <memory>

namespace ringgrad {

/// A 64-byte-aligned buffer of `nbytes` bytes on the CPU, zero-initialised unless `zeroed` is
/// false (for outputs a kernel overwrites entirely: clearing them first costs a pass over memory).
/// Shared through std::shared_ptr: it lives as long as the last tensor that views it.
class Storage {
 public:
  explicit Storage(std::size_t nbytes, bool zeroed = true);

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t nbytes() const { return nbytes_; }

  /// Reallocates to `nbytes`, keeping the first min(old, new) bytes and zeroing the rest;
  /// 0 frees the memory. Tensors viewing this storage stay attached to it, as with PyTorch's
  /// untyped_storage().resize_(): sharded data parallelism frees a parameter's memory
  /// between uses and refills it in place. A view must not be read while it lies past nbytes.
  void resize(std::size_t nbytes);

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], Free> data_;
  std::size_t nbytes_;
};

}  // namespace ringgrad
