// The process-wide matmul precision and the CPU loop that rounds an array to bfloat16.
#include "tensor/precision.h"

#include <stdexcept>
#include <string>

namespace ringgrad {
namespace {
MatmulPrecision g_precision = MatmulPrecision::kFloat32;
}  // namespace

void set_matmul_precision(MatmulPrecision precision) { g_precision = precision; }
MatmulPrecision matmul_precision() { return g_precision; }

const char* matmul_precision_name(MatmulPrecision precision) {
  return precision == MatmulPrecision::kBFloat16 ? "bf16" : "fp32";
}

MatmulPrecision parse_matmul_precision(std::string_view name) {
  if (name == "fp32" || name == "float32") return MatmulPrecision::kFloat32;
  if (name == "bf16" || name == "bfloat16") return MatmulPrecision::kBFloat16;
  throw std::invalid_argument("matmul precision: expected fp32 or bf16, got '" + std::string(name) + "'");
}

void round_to_bfloat16(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = round_to_bfloat16(src[i]);
}

}  // namespace ringgrad
