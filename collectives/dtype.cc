// Names of dtypes and reduction operators, and their parsers.
#include "collectives/dtype.h"

#include <stdexcept>

#include <fmt/format.h>

namespace ringgrad::collectives {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kUInt8: return 1;
  }
  throw std::invalid_argument(fmt::format("unknown dtype {}", static_cast<int>(dtype)));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float";
    case DType::kFloat64: return "double";
    case DType::kFloat16: return "half";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "sum";
    case ReduceOp::PRODUCT: return "prod";
    case ReduceOp::MIN: return "min";
    case ReduceOp::MAX: return "max";
    case ReduceOp::AVG: return "avg";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType d : kAllDTypes)
    if (name == dtype_name(d)) return d;
  if (name == "float32") return DType::kFloat32;
  if (name == "float64") return DType::kFloat64;
  if (name == "float16") return DType::kFloat16;
  if (name == "bf16") return DType::kBFloat16;
  if (name == "int") return DType::kInt32;
  if (name == "long") return DType::kInt64;
  throw std::invalid_argument(fmt::format(
      "unknown dtype '{}': expected float, double, half, bfloat16, int32, int64 or uint8", name));
}

ReduceOp parse_reduce_op(std::string_view name) {
  for (ReduceOp op : kAllReduceOps)
    if (name == reduce_op_name(op)) return op;
  if (name == "product") return ReduceOp::PRODUCT;
  throw std::invalid_argument(
      fmt::format("unknown reduction op '{}': expected sum, prod, min, max or avg", name));
}

}  // namespace ringgrad::collectives
