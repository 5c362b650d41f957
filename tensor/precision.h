// Matmul precision: bf16 mixed precision as PyTorch's autocast applies it to matmuls. Parameters,
// activations and optimizer state stay float32; inside every float32 GEMM (matmul, linear,
// attention; forward and backward) the operands are rounded to bfloat16 and products summed in
// float32. On a GPU cuBLAS reads bf16 operands (tensor cores); on the CPU the rounding is
// emulated on float32 values, which gives the same numerics and no speedup.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "tensor/host_device.h"

namespace ringgrad {

enum class MatmulPrecision { kFloat32, kBFloat16 };

/// The process-wide setting every float32 GEMM reads (float32 at start; float64 GEMMs ignore it).
/// Single-threaded like the kernels: set it before training, not while GEMMs run.
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();

/// "fp32" or "bf16", the spelling of the programs' --dtype flag.
const char* matmul_precision_name(MatmulPrecision precision);
/// Parses "fp32"/"float32" or "bf16"/"bfloat16"; throws std::invalid_argument otherwise.
MatmulPrecision parse_matmul_precision(std::string_view name);

/// Sets the matmul precision for the guard's lifetime, then restores the previous one.
class MatmulPrecisionGuard {
 public:
  explicit MatmulPrecisionGuard(MatmulPrecision precision) : previous_(matmul_precision()) {
    set_matmul_precision(precision);
  }
  ~MatmulPrecisionGuard() { set_matmul_precision(previous_); }
  MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
  MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

 private:
  MatmulPrecision previous_;
};

/// The bfloat16 nearest to x (round to nearest, ties to even), as its 16 bits: the top half of
/// x's float32 bits after rounding. NaN stays NaN (made quiet), infinities stay infinite, and
/// finite values beyond the largest bf16 round to infinity, as in PyTorch.
RINGGRAD_HOST_DEVICE inline std::uint16_t bfloat16_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // just under half a bf16 ulp; exactly half when the kept bit is odd
  return static_cast<std::uint16_t>(u >> 16);
}

/// x rounded to the nearest bfloat16, as a float32 (exact: bf16 values are float32 values).
RINGGRAD_HOST_DEVICE inline float round_to_bfloat16(float x) {
  const std::uint32_t u = static_cast<std::uint32_t>(bfloat16_bits(x)) << 16;
  float y;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

/// dst[i] = round_to_bfloat16(src[i]) for i < n, on the CPU (dst may equal src).
void round_to_bfloat16(const float* src, float* dst, std::int64_t n);

}  // namespace ringgrad
