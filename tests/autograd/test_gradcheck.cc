// Every differentiable op against central differences in float64.
// Tolerance: |autograd - numeric| <= 1e-7 + 1e-5 |numeric| (h = 1e-6; truncation error is
// O(h^2) and rounding error O(1e-16 / h), both far below it).
#include <catch2/catch.hpp>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "support/gradcheck.h"
#include "tensor/elementwise.h"

using namespace ringgrad;
using ringgrad::testing::gradcheck;
using ringgrad::testing::random_input;
using Inputs = std::vector<Tensor>;

TEST_CASE("element-wise ops, including broadcast operands") {
  Tensor a = random_input({3, 4}, 1), b = random_input({4}, 2), c = random_input({3, 1}, 3);
  Tensor pos = random_input({3, 4}, 4);
  {
    ringgrad::NoGradGuard g;
    kernels::add_(pos, Tensor::scalar(2.0, DType::Float64));  // keep log/sqrt/pow away from 0
  }
  CHECK(gradcheck([](const Inputs& x) { return x[0] + x[1]; }, {a, b}) == "");
  CHECK(gradcheck([](const Inputs& x) { return x[0] - x[1]; }, {a, c}) == "");
  CHECK(gradcheck([](const Inputs& x) { return x[0] * x[1]; }, {c, b}) == "");
  CHECK(gradcheck([](const Inputs& x) { return x[0] / x[1]; }, {a, pos}) == "");
  CHECK(gradcheck([](const Inputs& x) { return x[0] * 3.0 + 1.0; }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return pow(x[0], 2.5); }, {pos}) == "");
  CHECK(gradcheck([](const Inputs& x) { return -exp(x[0]); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return log(x[0]); }, {pos}) == "");
  CHECK(gradcheck([](const Inputs& x) { return sqrt(x[0]); }, {pos}) == "");
  CHECK(gradcheck([](const Inputs& x) { return tanh(x[0]); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return sigmoid(x[0]); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return relu(x[0]); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return gelu(x[0]); }, {a}) == "");
}

TEST_CASE("reductions") {
  Tensor a = random_input({2, 3, 4}, 5);
  CHECK(gradcheck([](const Inputs& x) { return sum(x[0]); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return sum(x[0], {0, 2}); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return mean(x[0], {1}, true); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return amax(x[0], 2); }, {a}) == "");
}

TEST_CASE("views: the gradient lands in the base's layout") {
  Tensor a = random_input({2, 3, 4}, 6);
  CHECK(gradcheck([](const Inputs& x) { return view(x[0], {6, 4}); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return reshape(transpose(x[0], 0, 2), {-1}); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return permute(x[0], {2, 0, 1}) * 2.0; }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return narrow(x[0], 1, 1, 2); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return expand(unsqueeze(x[0], 0), {5, 2, 3, 4}); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return squeeze(narrow(x[0], 0, 1, 1), 0); }, {a}) == "");
  // The same base used through two overlapping views: the gradients add.
  CHECK(gradcheck([](const Inputs& x) { return narrow(x[0], 2, 0, 3) * narrow(x[0], 2, 1, 3); }, {a}) == "");
}

TEST_CASE("matmul, plain, batched, broadcast and transposed") {
  Tensor a = random_input({3, 4}, 7), b = random_input({4, 5}, 8);
  Tensor x = random_input({2, 3, 4}, 9), y = random_input({2, 4, 5}, 10);
  CHECK(gradcheck([](const Inputs& v) { return matmul(v[0], v[1]); }, {a, b}) == "");
  CHECK(gradcheck([](const Inputs& v) { return matmul(v[0], v[1]); }, {x, y}) == "");
  CHECK(gradcheck([](const Inputs& v) { return matmul(v[0], v[1]); }, {x, b}) == "");
  CHECK(gradcheck([](const Inputs& v) { return matmul(v[0], v[1]); }, {a, y}) == "");
  CHECK(gradcheck([](const Inputs& v) { return matmul(v[0], transpose(v[1], 0, 1)); }, {a, random_input({5, 4}, 11)}) == "");
}

TEST_CASE("softmax, log_softmax, embedding, gather, cross_entropy") {
  Tensor a = random_input({3, 5}, 12);
  CHECK(gradcheck([](const Inputs& x) { return softmax(x[0], -1); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return softmax(x[0], 0); }, {a}) == "");
  CHECK(gradcheck([](const Inputs& x) { return log_softmax(x[0], 1); }, {a}) == "");
  Tensor idx = Tensor::from_vector<std::int64_t>({1, 4, 1, 0}, {2, 2});  // row 1 used twice
  CHECK(gradcheck([&](const Inputs& x) { return embedding(x[0], idx); }, {random_input({5, 3}, 13)}) == "");
  Tensor pick = Tensor::from_vector<std::int64_t>({2, 2, 0}, {3, 1});
  CHECK(gradcheck([&](const Inputs& x) { return gather(x[0], 1, pick); }, {a}) == "");
  Tensor targets = Tensor::from_vector<std::int64_t>({4, 0, 2}, {3});
  CHECK(gradcheck([&](const Inputs& x) { return cross_entropy(x[0], targets); }, {a}) == "");
  Tensor seq_targets = Tensor::from_vector<std::int64_t>({1, 2, 0, 3}, {2, 2});
  CHECK(gradcheck([&](const Inputs& x) { return cross_entropy(x[0], seq_targets); }, {random_input({2, 2, 4}, 14)}) == "");
}
