// Element types and reduction operators of the collectives, with PyTorch's ReduceOp names.
// float16 and bfloat16 are stored as 16-bit patterns and reduced in float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ringgrad::collectives {

/// Element type of a communication buffer. Sizes: 4, 8, 2, 2, 4, 8, 1 bytes.
enum class DType : uint8_t { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8 };

/// Reduction operator, PyTorch's names. AVG is SUM divided by world_size (integer division
/// for integer dtypes), as in NCCL's ncclAvg.
enum class ReduceOp : uint8_t { SUM, PRODUCT, MIN, MAX, AVG };

inline constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                       DType::kBFloat16, DType::kInt32,   DType::kInt64,
                                       DType::kUInt8};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN,
                                             ReduceOp::MAX, ReduceOp::AVG};

/// Bytes per element.
std::size_t dtype_size(DType dtype);

/// nccl-tests' type names: "float", "double", "half", "bfloat16", "int32", "int64", "uint8".
std::string_view dtype_name(DType dtype);
/// nccl-tests' operator names: "sum", "prod", "min", "max", "avg".
std::string_view reduce_op_name(ReduceOp op);

/// Parse the names above (also "float32", "float64", "float16", "bf16", "int", "long",
/// "product"); throws std::invalid_argument listing the valid names.
DType parse_dtype(std::string_view name);
ReduceOp parse_reduce_op(std::string_view name);

}  // namespace ringgrad::collectives
