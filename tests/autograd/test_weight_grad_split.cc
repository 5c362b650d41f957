// Backward split into B and W (autograd/linear.h, for zero-bubble pipelines): inside a
// DeferWeightGrads scope, backward through linear leaves the weights' gradients out and queues
// one pass per weight; running the passes then gives the gradients of one plain backward,
// bit for bit (the same GEMMs), while the input's and the biases' come out of B already.
#include <catch2/catch.hpp>

#include <vector>

#include "autograd/engine.h"
#include "autograd/linear.h"
#include "autograd/ops.h"
#include "tensor/random.h"

using namespace ringgrad;

namespace {

struct Mlp {  // tanh(x W1^T + b1) W2^T + b2, float64
  Tensor x, w1, b1, w2, b2;
  Mlp() {
    Generator gen(5);
    auto param = [&](const Shape& shape) {
      Tensor t = Tensor::empty(shape, DType::Float64);
      kernels::normal_(t, 0.0, 1.0, gen);
      return t.set_requires_grad(true);
    };
    x = param({3, 4}), w1 = param({5, 4}), b1 = param({5}), w2 = param({2, 5}), b2 = param({2});
  }
  Tensor loss() const { return sum(linear(tanh(linear(x, w1, b1)), w2, b2)); }
};

bool equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    if (a.data<double>()[i] != b.data<double>()[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("DeferWeightGrads: B leaves the weights' gradients to W, which then gives plain backward's, bit for bit") {
  Mlp plain, split;
  backward(plain.loss());
  std::vector<WeightGradPass> passes;
  {
    DeferWeightGrads defer(passes);
    backward(split.loss());
  }
  REQUIRE(passes.size() == 2);  // one per linear weight
  CHECK_FALSE(split.w1.grad().defined());
  CHECK_FALSE(split.w2.grad().defined());
  CHECK(equal(split.x.grad(), plain.x.grad()));
  CHECK(equal(split.b1.grad(), plain.b1.grad()));
  CHECK(equal(split.b2.grad(), plain.b2.grad()));
  for (WeightGradPass& pass : passes) pass();
  CHECK(equal(split.w1.grad(), plain.w1.grad()));
  CHECK(equal(split.w2.grad(), plain.w2.grad()));
}

TEST_CASE("DeferWeightGrads: outside the scope backward computes every gradient at once") {
  Mlp m;
  std::vector<WeightGradPass> passes;
  { DeferWeightGrads defer(passes); }
  backward(m.loss());
  CHECK(passes.empty());
  CHECK(m.w1.grad().defined());
  CHECK(m.w2.grad().defined());
}
