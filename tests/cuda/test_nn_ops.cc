// The GEMM-based and fused ops of the MLP and the GPT on a GPU against their CPU twins, in
// float32 and with bf16 matmul precision: linear, batched matmul, layer norm and causal
// self-attention, forward and gradients.
#include <catch2/catch.hpp>

#include "autograd/linear.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "gpu_test.h"
#include "tensor/precision.h"

using namespace ringgrad;
using namespace ringgrad::testing;
using Inputs = std::vector<Tensor>;

namespace {

struct Mode {
  const char* name;
  MatmulPrecision precision;
  Tolerance tol;
};
const Mode kModes[] = {{"fp32", MatmulPrecision::kFloat32, {2e-5, 2e-4}},
                       {"bf16", MatmulPrecision::kBFloat16, kBFloat16}};
// fp32 GEMMs sum K products in another order than OpenBLAS (and cuBLAS may split K), so the
// float32 tolerance here is twice kFloat32.

}  // namespace

TEST_CASE("cuda linear: forward and gradients of x, W and b") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor x = random_param({4, 16, 48}, 30), w = random_param({96, 48}, 31), b = random_param({96}, 32);
  for (const Mode& mode : kModes) {
    INFO(mode.name);
    MatmulPrecisionGuard scope(mode.precision);
    CHECK(compare_with_cpu([](const Inputs& in) { return linear(in[0], in[1], in[2]); }, {x, w, b}, mode.tol) == "");
    CHECK(compare_with_cpu([](const Inputs& in) { return linear(in[0], in[1]); }, {x, w}, mode.tol) == "");
  }
}

TEST_CASE("cuda matmul: batched with broadcast batch dims, transposed operands") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = random_param({2, 3, 17, 33}, 33), b = random_param({3, 33, 20}, 34);
  for (const Mode& mode : kModes) {
    INFO(mode.name);
    MatmulPrecisionGuard scope(mode.precision);
    CHECK(compare_with_cpu([](const Inputs& in) { return matmul(in[0], in[1]); }, {a, b}, mode.tol) == "");
    // a^T-shaped views: [2, 3, 33, 17]^T @ [3, 17, 20]^T-ish strides reach the GEMM unchanged.
    CHECK(compare_with_cpu([](const Inputs& in) { return matmul(transpose(in[0], -1, -2), transpose(in[1], -1, -2)); },
                           {random_param({2, 3, 33, 17}, 35), random_param({3, 20, 33}, 36)}, mode.tol) == "");
  }
}

TEST_CASE("cuda matmul: bf16 precision really rounds the operands on the GPU") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = to_gpu(random_tensor({64, 64}, 37)), b = to_gpu(random_tensor({64, 64}, 38));
  const Tensor fp32 = matmul(a, b);
  Tensor bf16;
  {
    MatmulPrecisionGuard scope(MatmulPrecision::kBFloat16);
    bf16 = matmul(a, b);
  }
  // Rounding 64 products' operands to 8 bits moves each sum by ~2^-9 * sqrt(64) ~ 1e-2.
  CHECK(compare(bf16, fp32, Tolerance{1e-4, 0}) != "");
  CHECK(compare(bf16, fp32, Tolerance{0.1, 0}) == "");
}

TEST_CASE("cuda layer_norm: forward and gradients, with and without bias, C 48 and 384") {
  RINGGRAD_REQUIRE_GPU();
  for (std::int64_t c : {48, 384}) {
    INFO("C " << c);
    const Tensor x = random_param({4, 16, c}, 40), w = random_param({c}, 41), b = random_param({c}, 42);
    CHECK(compare_with_cpu([](const Inputs& in) { return layer_norm(in[0], in[1], in[2]); }, {x, w, b}, kFloat32) == "");
    CHECK(compare_with_cpu([](const Inputs& in) { return layer_norm(in[0], in[1], Tensor()); }, {x, w}, kFloat32) == "");
  }
}

TEST_CASE("cuda causal_self_attention: forward and gradient with 1, 4 and 6 heads") {
  RINGGRAD_REQUIRE_GPU();
  // T 130 spans more than one warp and one block of 128 threads; C 48.
  const Tensor qkv = random_param({2, 130, 3 * 48}, 43);
  for (const Mode& mode : kModes) {
    for (std::int64_t heads : {1, 4, 6}) {
      INFO(mode.name << ", " << heads << " heads");
      MatmulPrecisionGuard scope(mode.precision);
      CHECK(compare_with_cpu([heads](const Inputs& in) { return causal_self_attention(in[0], heads); }, {qkv},
                             mode.tol) == "");
    }
  }
}

TEST_CASE("cuda causal_self_attention: shakespeare-char's head shape, T 256 and hs 64, 3 heads of 4 sequences") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor qkv = random_param({4, 256, 3 * 192}, 44);
  for (const Mode& mode : kModes) {
    INFO(mode.name);
    MatmulPrecisionGuard scope(mode.precision);
    CHECK(compare_with_cpu([](const Inputs& in) { return causal_self_attention(in[0], 3); }, {qkv}, mode.tol) == "");
  }
}
