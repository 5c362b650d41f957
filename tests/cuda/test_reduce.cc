// Reductions and the row-wise ops built on them, on a GPU against their CPU twins: sum, mean
// and max over dims, softmax and log_softmax with their backward, and cross-entropy. Rows of
// 1000+ elements reach past one block of threads.
#include <catch2/catch.hpp>

#include "autograd/ops.h"
#include "gpu_test.h"
#include "tensor/reduce.h"

using namespace ringgrad;
using namespace ringgrad::testing;
using Inputs = std::vector<Tensor>;

TEST_CASE("cuda reductions: sum and mean over dims, keepdim, all elements") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = random_param({3, 4, 1500}, 10);
  // Sums of up to 18000 terms in [-1, 1): float32 rounding of the partial sums (which reach
  // ~100) grows like sqrt(n) 2^-24 |partial|, so sums near 0 need an absolute allowance.
  const Tolerance sum_tol{2e-4, 1e-4};
  for (const std::vector<std::int64_t>& dims : std::vector<std::vector<std::int64_t>>{{}, {0}, {1}, {-1}, {0, 2}}) {
    for (bool keepdim : {false, true}) {
      INFO("dims of size " << dims.size() << (dims.empty() ? "" : " first " + std::to_string(dims[0]))
                           << " keepdim " << keepdim);
      CHECK(compare_with_cpu([&](const Inputs& in) { return sum(in[0], dims, keepdim); }, {a}, sum_tol) == "");
      CHECK(compare_with_cpu([&](const Inputs& in) { return mean(in[0], dims, keepdim); }, {a}, kFloat32) == "");
    }
  }
}

TEST_CASE("cuda reductions: max, argmax and amax's gradient") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = random_param({6, 1100}, 11);
  for (std::int64_t dim : {0, 1}) {
    INFO("dim " << dim);
    const auto [values, indices] = kernels::max(to_gpu(a), dim, true);
    const auto [cpu_values, cpu_indices] = kernels::max(a.detach(), dim, true);
    CHECK(compare(values, cpu_values, Tolerance{0, 0}) == "");
    CHECK(compare(indices, cpu_indices, Tolerance{0, 0}) == "");
    CHECK(compare(kernels::argmax(to_gpu(a), dim), kernels::argmax(a.detach(), dim), Tolerance{0, 0}) == "");
    CHECK(compare_with_cpu([dim](const Inputs& in) { return amax(in[0], dim); }, {a}, kFloat32) == "");
  }
}

TEST_CASE("cuda softmax and log_softmax: forward and backward, last and inner dim") {
  RINGGRAD_REQUIRE_GPU();
  for (const Shape& shape : {Shape{8, 65}, Shape{3, 2, 1500}}) {
    Tensor x = random_tensor(shape, 12, DType::Float32, -4.0, 4.0);
    x.set_requires_grad(true);
    for (std::int64_t dim : {-1, 0}) {
      INFO("shape " << shape_str(shape) << " dim " << dim);
      CHECK(compare_with_cpu([dim](const Inputs& in) { return softmax(in[0], dim); }, {x}, kFloat32) == "");
      CHECK(compare_with_cpu([dim](const Inputs& in) { return log_softmax(in[0], dim); }, {x}, kFloat32) == "");
    }
  }
}

TEST_CASE("cuda cross_entropy: loss and gradient of the logits, GPT-shaped") {
  RINGGRAD_REQUIRE_GPU();
  // [B, T, V] logits against [B, T] targets, as the GPT's loss; V = 65 characters.
  const Tensor logits = random_tensor({4, 16, 65}, 13, DType::Float32, -3.0, 3.0);
  Tensor x = logits;
  x.set_requires_grad(true);
  const Tensor targets = random_indices({4, 16}, 65, 14);
  CHECK(compare_with_cpu([](const Inputs& in) { return cross_entropy(in[0], in[1]); }, {x, targets}, kFloat32) == "");
}
