// Torch tensors as ringgrad buffers: the dtype and operator tables, staging, flattening.
#include "collectives/torch/tensors.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <optional>

namespace ringgrad::torch_backend {
namespace {

using collectives::DType;
using RedOp = collectives::ReduceOp;

// ringgrad's own dtype for `type`, if it has one.
std::optional<DType> native(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return DType::kFloat32;
    case at::kDouble: return DType::kFloat64;
    case at::kHalf: return DType::kFloat16;
    case at::kBFloat16: return DType::kBFloat16;
    case at::kInt: return DType::kInt32;
    case at::kLong: return DType::kInt64;
    case at::kByte: return DType::kUInt8;
    default: return std::nullopt;
  }
}

const char* op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

std::optional<RedOp> ringgrad_op(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return RedOp::SUM;
    case c10d::ReduceOp::AVG: return RedOp::AVG;
    case c10d::ReduceOp::PRODUCT: return RedOp::PRODUCT;
    case c10d::ReduceOp::MIN: return RedOp::MIN;
    case c10d::ReduceOp::MAX: return RedOp::MAX;
    default: return std::nullopt;
  }
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const CallName& call) {
  return out << call.op << " on rank " << call.rank << " of " << call.size;
}

collectives::Buffer moved(const at::Tensor& t) {
  const std::optional<DType> dtype = native(t.scalar_type());
  return {t.data_ptr(), static_cast<std::size_t>(t.numel()) * moved_units(t.scalar_type()), dtype.value_or(DType::kUInt8)};
}

std::size_t moved_units(at::ScalarType type) { return native(type) ? 1 : c10::elementSize(type); }

Reduction reduction(const CallName& what, const c10d::ReduceOp& op, at::ScalarType type) {
  const c10d::ReduceOp::RedOpType kind = op.op_;
  const std::optional<RedOp> ours = ringgrad_op(kind);
  TORCH_CHECK(ours, "ringgrad ", what, ": ReduceOp.", op_name(kind),
              " is not supported (ringgrad reduces with SUM, AVG, PRODUCT, MIN and MAX)");
  if (auto dtype = native(type)) return {*dtype, *ours};
  if (type == at::kBool && *ours != RedOp::AVG)  // 0/1 bytes: or is max, and is min
    return {DType::kUInt8, *ours == RedOp::SUM || *ours == RedOp::MAX ? RedOp::MAX : RedOp::MIN};
  if (type == at::kChar && (*ours == RedOp::SUM || *ours == RedOp::PRODUCT)) return {DType::kUInt8, *ours};
  if (type == at::kComplexFloat && (*ours == RedOp::SUM || *ours == RedOp::AVG)) return {DType::kFloat32, *ours, 2};
  if (type == at::kComplexDouble && (*ours == RedOp::SUM || *ours == RedOp::AVG)) return {DType::kFloat64, *ours, 2};
  TORCH_CHECK(false, "ringgrad ", what, ": ReduceOp.", op_name(kind), " on ", at::toString(type),
              " tensors is not supported (ringgrad reduces float, double, half, bfloat16, int32, int64 and uint8; "
              "bool except AVG; int8 with SUM and PRODUCT; complex with SUM and AVG)");
}

collectives::Buffer reduced(const at::Tensor& t, const Reduction& r) {
  return {t.data_ptr(), static_cast<std::size_t>(t.numel()) * r.per_element, r.dtype};
}

void Staged::copy_back() const {
  if (!data.is_same(user)) user.copy_(data);
}

void check_cpu(const CallName& what, const at::Tensor& t) {
  TORCH_CHECK(t.layout() == at::kStrided, "ringgrad ", what, ": only dense tensors are supported (got a ", t.layout(),
              " tensor)");
  TORCH_CHECK(t.device().is_cpu(), "ringgrad ", what, ": only CPU tensors are supported (got a tensor on ", t.device(),
              ")");
}

Staged stage(const CallName& what, const at::Tensor& t) {
  check_cpu(what, t);
  return {t, t.is_contiguous() ? t : t.contiguous()};
}

at::Tensor flatten(const CallName& what, const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.scalar_type() == tensors.front().scalar_type(), "ringgrad ", what,
                ": every tensor must have one dtype (got ", tensors.front().scalar_type(), " and ", t.scalar_type(), ")");
    flat.push_back(stage(what, t).data.view(-1));
  }
  return at::cat(flat);
}

void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

const at::Tensor& only(const CallName& what, const std::vector<at::Tensor>& tensors) {
  TORCH_CHECK(tensors.size() == 1, "ringgrad ", what, ": takes one tensor per process (got ", tensors.size(), ")");
  return tensors.front();
}

void check_like(const CallName& what, const char* role, const std::vector<at::Tensor>& tensors, const at::Tensor& like) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    TORCH_CHECK(tensors[i].scalar_type() == like.scalar_type(), "ringgrad ", what, ": ", role, " tensor ", i, " is ",
                tensors[i].scalar_type(), ", expected ", like.scalar_type());
    TORCH_CHECK(tensors[i].numel() == like.numel(), "ringgrad ", what, ": ", role, " tensor ", i, " has ",
                tensors[i].numel(), " elements, expected ", like.numel());
  }
}

}  // namespace ringgrad::torch_backend
