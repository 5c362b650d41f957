// Element-wise ops on a GPU against their CPU twins: binary ops with broadcasting and strided
// operands, scalar forms, unary ops, relu/gelu and their backward, in-place updates.
#include <catch2/catch.hpp>

#include "autograd/ops.h"
#include "gpu_test.h"
#include "tensor/elementwise.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::testing;
using Inputs = std::vector<Tensor>;
using Op = std::function<Tensor(const Inputs&)>;

TEST_CASE("cuda element-wise: binary ops broadcast, forward and gradients (float32, float64)") {
  RINGGRAD_REQUIRE_GPU();
  const std::vector<std::pair<const char*, Op>> ops = {
      {"add", [](const Inputs& in) { return in[0] + in[1]; }},
      {"sub", [](const Inputs& in) { return in[0] - in[1]; }},
      {"mul", [](const Inputs& in) { return in[0] * in[1]; }},
      {"div", [](const Inputs& in) { return in[0] / (in[1] + 2.0); }},  // divisor in [1, 3)
      {"a + b^T (strided b)", [](const Inputs& in) { return in[0] + transpose(in[1], 0, 1); }},
  };
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tolerance tol = dtype == DType::Float32 ? kFloat32 : Tolerance{1e-12, 1e-12};
    for (const auto& [name, op] : ops) {
      INFO(name << " in " << dtype_name(dtype));
      // [4, 1, 5] with [3, 1] -> [4, 3, 5]; the strided case: [4, 3, 5] with [5, 3]^T.
      const bool strided = std::string(name).starts_with("a + b^T");
      const Tensor a = random_param(strided ? Shape{4, 3, 5} : Shape{4, 1, 5}, 1, dtype);
      const Tensor b = random_param(strided ? Shape{5, 3} : Shape{3, 1}, 2, dtype);
      CHECK(compare_with_cpu(op, {a, b}, tol) == "");
    }
  }
}

TEST_CASE("cuda element-wise: scalar forms and pow") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = random_param({6, 7}, 3);
  CHECK(compare_with_cpu([](const Inputs& in) { return in[0] + 2.5; }, {a}, kFloat32) == "");
  CHECK(compare_with_cpu([](const Inputs& in) { return in[0] * -3.0; }, {a}, kFloat32) == "");
  CHECK(compare_with_cpu([](const Inputs& in) { return pow(in[0], 2.0); }, {a}, kFloat32) == "");
  CHECK(compare_with_cpu([](const Inputs& in) { return pow(in[0] + 2.0, -0.5); }, {a}, kFloat32) == "");
}

TEST_CASE("cuda element-wise: unary ops, relu and gelu with their backward") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = random_param({5, 33}, 4);
  const std::vector<std::pair<const char*, Op>> ops = {
      {"neg", [](const Inputs& in) { return -in[0]; }},
      {"exp", [](const Inputs& in) { return exp(in[0]); }},
      {"log", [](const Inputs& in) { return log(in[0] + 1.5); }},
      {"sqrt", [](const Inputs& in) { return sqrt(in[0] + 1.5); }},
      {"tanh", [](const Inputs& in) { return tanh(in[0] * 3.0); }},
      {"sigmoid", [](const Inputs& in) { return sigmoid(in[0] * 3.0); }},
      {"relu", [](const Inputs& in) { return relu(in[0]); }},
      {"gelu", [](const Inputs& in) { return gelu(in[0] * 3.0); }},
  };
  for (const auto& [name, op] : ops) {
    INFO(name);
    CHECK(compare_with_cpu(op, {a}, kFloat32) == "");
  }
}

TEST_CASE("cuda element-wise: add_, mul_ and fill_ in place, eq") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor dst = random_tensor({4, 6}, 5), src = random_tensor({6}, 6);
  const Tensor on_gpu = to_gpu(dst);
  kernels::add_(dst, src, -0.5);
  kernels::add_(on_gpu, to_gpu(src), -0.5);
  CHECK(compare(on_gpu, dst, kFloat32) == "");
  kernels::mul_(dst, 3.0);
  kernels::mul_(on_gpu, 3.0);
  CHECK(compare(on_gpu, dst, kFloat32) == "");
  kernels::fill_(kernels::narrow(dst, 1, 2, 3), 7.0);
  kernels::fill_(kernels::narrow(on_gpu, 1, 2, 3), 7.0);
  CHECK(compare(on_gpu, dst, Tolerance{0, 0}) == "");
  CHECK(compare(kernels::eq(on_gpu, to_gpu(dst)), Tensor::ones(dst.shape()), Tolerance{0, 0}) == "");
}

TEST_CASE("cuda element-wise: mixing devices throws std::invalid_argument") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = random_tensor({3}, 7);
  CHECK_THROWS_AS(kernels::add(to_gpu(a), a), std::invalid_argument);
}
