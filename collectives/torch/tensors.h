// Torch tensors as ringgrad buffers: which DType a tensor travels as, which ReduceOp a c10d
// ReduceOp becomes, and a tensor made contiguous for a call and copied back after it, as
// PyTorch's own backends do. Errors are c10::Error (RuntimeError in Python) naming the call.
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "collectives/buffer.h"
#include "collectives/dtype.h"

namespace ringgrad::torch_backend {

/// How an error names a call and this rank: "allreduce on rank 1 of 2" (written only when an
/// error is, so making one costs nothing).
struct CallName {
  const char* op;
  int rank;
  int size;
};
std::ostream& operator<<(std::ostream& out, const CallName& call);

/// A tensor moved without arithmetic (broadcast, the gathers, scatter, all_to_all, send/recv):
/// ringgrad's own dtypes travel as themselves, bool and int8 as uint8, every other dtype
/// (int16, complex, ...) as its bytes. `t` must be contiguous and on the CPU.
collectives::Buffer moved(const at::Tensor& t);
/// How many of moved()'s elements one element of a `type` tensor is (its bytes, or 1).
std::size_t moved_units(at::ScalarType type);

/// How a reduction of `type` tensors with `op` runs in ringgrad: the dtype its elements travel
/// as, the operator, and how many of those elements one tensor element is (2 for complex).
struct Reduction {
  collectives::DType dtype;
  collectives::ReduceOp op;
  std::size_t per_element = 1;
};
/// SUM, AVG, PRODUCT, MIN and MAX on ringgrad's dtypes; on bool, SUM and MAX are logical or,
/// PRODUCT and MIN logical and (as gloo computes them); on int8, SUM and PRODUCT (which wrap the
/// same as on uint8); on complex, SUM and AVG. Anything else (BAND, BOR, BXOR, PREMUL_SUM, MIN
/// of complex, ...) throws, naming the call `what`, the operator and the dtype.
Reduction reduction(const CallName& what, const c10d::ReduceOp& op, at::ScalarType type);
/// `t` (contiguous, CPU) as the buffer `r` reduces.
collectives::Buffer reduced(const at::Tensor& t, const Reduction& r);

/// A caller's tensor and the contiguous CPU tensor the call reads or writes: the same tensor
/// when it already is contiguous, else a copy (of the values, for an input).
struct Staged {
  at::Tensor user;
  at::Tensor data;
  /// Copies the result into the caller's tensor when the call wrote a copy.
  void copy_back() const;
};
/// Throws, naming `what`, unless `t` is dense and on the CPU.
void check_cpu(const CallName& what, const at::Tensor& t);
/// `t` checked (check_cpu) and staged.
Staged stage(const CallName& what, const at::Tensor& t);

/// The tensors laid end to end in one new contiguous 1-D tensor (their dtype: they must share
/// one, else an error naming `what`), and the reverse: `flat`'s pieces copied into `tensors`.
at::Tensor flatten(const CallName& what, const std::vector<at::Tensor>& tensors);
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);

/// Exactly one tensor: c10d passes a list, ringgrad takes one tensor per process.
const at::Tensor& only(const CallName& what, const std::vector<at::Tensor>& tensors);
/// Throws unless every tensor has `like`'s dtype and element count; `role` names the list
/// ("output", "input") and `what` the call.
void check_like(const CallName& what, const char* role, const std::vector<at::Tensor>& tensors, const at::Tensor& like);

}  // namespace ringgrad::torch_backend
