// bf16 matmul precision on the CPU: the rounding on known values, and matmul at bf16 against a
// float64 product of the bf16-rounded inputs (equal up to float32 accumulation) and against the
// float32 matmul (apart by the expected bf16 amount).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/linear.h"
#include "tensor/matmul.h"
#include "tensor/precision.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
namespace k = ringgrad::kernels;

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

Tensor uniform(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  Tensor t = Tensor::zeros(shape);
  k::uniform_(t, -1, 1, gen);
  return t;
}

}  // namespace

TEST_CASE("bfloat16 rounding: to nearest with ties to even and NaN and infinities kept") {
  CHECK(bfloat16_bits(1.0f) == 0x3f80);
  CHECK(bfloat16_bits(-1.5f) == 0xbfc0);
  // 1 + 2^-8 lies halfway between 1 (even last bit) and 1 + 2^-7 (odd): to 1.
  CHECK(bfloat16_bits(from_bits(0x3f808000u)) == 0x3f80);
  // 1 + 3 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up.
  CHECK(bfloat16_bits(from_bits(0x3f818000u)) == 0x3f82);
  // Just above and below the halfway point.
  CHECK(bfloat16_bits(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(bfloat16_bits(from_bits(0x3f817fffu)) == 0x3f81);
  CHECK(round_to_bfloat16(0.1f) == 0.10009765625f);
  CHECK(bfloat16_bits(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(bfloat16_bits(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(std::isnan(round_to_bfloat16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(round_to_bfloat16(from_bits(0x7f800001u))));  // a NaN whose payload would round away
  CHECK(bfloat16_bits(std::numeric_limits<float>::max()) == 0x7f80);  // beyond the largest bf16
  CHECK(bfloat16_bits(from_bits(0x7f7f0000u)) == 0x7f7f);            // the largest bf16 itself
}

TEST_CASE("matmul precision: the setting and its guard and names") {
  REQUIRE(matmul_precision() == MatmulPrecision::kFloat32);
  {
    MatmulPrecisionGuard guard(MatmulPrecision::kBFloat16);
    CHECK(matmul_precision() == MatmulPrecision::kBFloat16);
  }
  CHECK(matmul_precision() == MatmulPrecision::kFloat32);
  CHECK(parse_matmul_precision("bf16") == MatmulPrecision::kBFloat16);
  CHECK(parse_matmul_precision("fp32") == MatmulPrecision::kFloat32);
  CHECK(std::string(matmul_precision_name(MatmulPrecision::kBFloat16)) == "bf16");
  CHECK_THROWS_AS(parse_matmul_precision("fp16"), std::invalid_argument);
}

TEST_CASE("bf16 matmul on the CPU: bf16 inputs with float32 accumulation") {
  const std::int64_t m = 37, kk = 256, n = 29;
  const Tensor a = uniform({m, kk}, 1), b = uniform({kk, n}, 2);
  Tensor bf16;
  {
    MatmulPrecisionGuard guard(MatmulPrecision::kBFloat16);
    bf16 = k::matmul(a, k::transpose(k::contiguous(k::transpose(b, 0, 1)), 0, 1));  // b read transposed
  }
  const Tensor fp32 = k::matmul(a, b);
  auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  auto c16 = bf16.to_vector<float>(), c32 = fp32.to_vector<float>();
  double diff_sq = 0, norm_sq = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double ref = 0, abs_sum = 0;
      for (std::int64_t p = 0; p < kk; ++p) {
        const double x = round_to_bfloat16(av[static_cast<std::size_t>(i * kk + p)]);
        const double y = round_to_bfloat16(bv[static_cast<std::size_t>(p * n + j)]);
        ref += x * y;
        abs_sum += std::abs(x * y);
      }
      // Products of bf16 numbers are exact in float32; only the k additions round (2^-24 each).
      const std::size_t at = static_cast<std::size_t>(i * n + j);
      REQUIRE(std::abs(c16[at] - ref) <= static_cast<double>(kk) * 0x1p-24 * abs_sum);
      diff_sq += (static_cast<double>(c16[at]) - c32[at]) * (static_cast<double>(c16[at]) - c32[at]);
      norm_sq += static_cast<double>(c32[at]) * c32[at];
    }
  }
  // Rounding each operand moves it by up to 2^-9 relative (2^-9 / sqrt(3) rms), so the
  // products, and a sum of products of random signs, move by about 2^-9: between 2^-12 and 2^-7.
  const double relative = std::sqrt(diff_sq / norm_sq);
  INFO("relative difference bf16 vs float32: " << relative);
  CHECK(relative > 0x1p-12);
  CHECK(relative < 0x1p-7);
}

TEST_CASE("bf16 precision reaches linear's GEMMs and leaves float64 alone") {
  const Tensor x = uniform({5, 48}, 3), w = uniform({7, 48}, 4);
  MatmulPrecisionGuard guard(MatmulPrecision::kBFloat16);
  const auto y = k::linear(x, w, Tensor()).to_vector<double>();
  const auto ref = k::matmul(x, k::transpose(w, 0, 1)).to_vector<double>();
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == Approx(ref[i]).margin(1e-6));
  // The same product in float64 is not rounded: it matches float64 math on the exact inputs.
  const Tensor x64 = k::to_dtype(x, DType::Float64), w64 = k::to_dtype(w, DType::Float64);
  const auto y64 = k::linear(x64, w64, Tensor()).to_vector<double>();
  MatmulPrecisionGuard fp32(MatmulPrecision::kFloat32);
  const auto exact = k::linear(x64, w64, Tensor()).to_vector<double>();
  for (std::size_t i = 0; i < y64.size(); ++i) REQUIRE(y64[i] == exact[i]);
}
