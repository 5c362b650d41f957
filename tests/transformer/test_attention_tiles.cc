// The float32 tile kernels of causal attention (tensor/attention_tiles.h) against the float64
// GEMM path, at head sizes and lengths that end tiles and row blocks early: forward, the saved
// probabilities (exact zeros above the diagonal) and backward.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "support/gradcheck.h"
#include "tensor/attention.h"
#include "tensor/attention_tiles.h"
#include "tensor/elementwise.h"
#include "tensor/precision.h"
#include "tensor/view.h"

using namespace ringgrad;
using ringgrad::testing::random_input;

namespace {

Tensor f32(const Tensor& t) { return kernels::to_dtype(t, DType::Float32); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

}  // namespace

TEST_CASE("attention tiles: float32 forward and backward equal float64's at T = 1 to 70, hs = 16 to 48") {
  if (!kernels::attention_tiles_run(DType::Float32, 16) || matmul_precision() != MatmulPrecision::kFloat32) {
    WARN("skipped: the attention tile kernels do not run here (no AVX2 and FMA, or RINGGRAD_ATTENTION_TILES=0)");
    return;
  }
  struct Case {
    std::int64_t t, heads, hs;
  };
  for (const Case c : {Case{1, 1, 16}, Case{5, 2, 16}, Case{17, 3, 32}, Case{33, 2, 48}, Case{64, 4, 32}, Case{70, 1, 16}}) {
    INFO("T " << c.t << ", " << c.heads << " heads of " << c.hs);
    const std::int64_t channels = c.heads * c.hs;
    // Scores of a few units, so the softmax is neither flat nor one-hot.
    const Tensor qkv = kernels::mul(random_input({2, c.t, 3 * channels}, 60 + static_cast<std::uint64_t>(c.t)), 2.0);
    const Tensor dy = random_input({2, c.t, channels}, 61);
    const auto at64 = kernels::causal_attention(qkv, c.heads);
    const auto at32 = kernels::causal_attention(f32(qkv), c.heads);
    CHECK(max_abs_diff(at32.y, at64.y) < 1e-5);
    CHECK(max_abs_diff(at32.att, at64.att) < 1e-5);
    const auto p = at32.att.to_vector<float>();
    bool upper_zero = true;
    for (std::int64_t bh = 0; bh < 2 * c.heads; ++bh)
      for (std::int64_t i = 0; i < c.t; ++i)
        for (std::int64_t j = i + 1; j < c.t; ++j) upper_zero = upper_zero && p[static_cast<std::size_t>((bh * c.t + i) * c.t + j)] == 0.0f;
    CHECK(upper_zero);
    const Tensor d64 = kernels::causal_attention_backward(dy, qkv, at64.att, c.heads);
    const Tensor d32 = kernels::causal_attention_backward(f32(dy), f32(qkv), at32.att, c.heads);
    CHECK(max_abs_diff(d32, d64) < 1e-4);
  }
}
