// Optimizer updates against the formulas worked by hand, clipping and its pieces, and an MLP
// that learns XOR.
#include <catch2/catch.hpp>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "tensor/random.h"

using namespace ringgrad;
using namespace ringgrad::nn;

static Tensor param(double value, double grad) {
  Tensor p = Tensor::from_vector<double>({value}, {1});
  p.set_requires_grad(true);
  p.set_grad(Tensor::from_vector<double>({grad}, {1}));
  return p;
}

TEST_CASE("SGD with momentum and weight decay") {
  Tensor p = param(1.0, 0.5);
  SGD sgd({{{p}, 0.1}}, 0.2, 0.9);
  sgd.step();  // d = 0.5 + 0.1 * 1 = 0.6; buf = 0.6; p = 1 - 0.2 * 0.6 = 0.88
  REQUIRE(p.item<double>() == Approx(0.88));
  sgd.step();  // d = 0.5 + 0.088 = 0.588; buf = 0.54 + 0.588 = 1.128; p = 0.88 - 0.2256
  REQUIRE(p.item<double>() == Approx(0.88 - 0.2 * 1.128));
}

TEST_CASE("Adam's first step moves each weight by lr, whatever the gradient's scale") {
  for (double g : {1e-3, 1.0, 1e3}) {
    Tensor p = param(1.0, g);
    Adam adam({{{p}, 0.0}}, AdamOptions{0.01, 0.9, 0.999, 1e-12});
    adam.step();  // m_hat = g, v_hat = g^2 => step = lr * g / |g|
    REQUIRE(p.item<double>() == Approx(0.99));
  }
}

TEST_CASE("AdamW decays the weight outside the adaptive step") {
  Tensor p = param(2.0, 1.0);
  AdamW adamw({{{p}, 0.5}}, AdamOptions{0.1, 0.9, 0.999, 1e-12});
  adamw.step();  // p = 2 (1 - 0.1 * 0.5) - 0.1 = 1.8
  REQUIRE(p.item<double>() == Approx(1.8));
  Tensor q = param(2.0, 1.0);
  Adam adam_l2({{{q}, 0.5}}, AdamOptions{0.1, 0.9, 0.999, 1e-12});
  adam_l2.step();  // L2: g = 1 + 0.5 * 2 = 2, normalised away: q = 2 - 0.1
  REQUIRE(q.item<double>() == Approx(1.9));
}

TEST_CASE("clip_grad_norm_ scales all gradients by one factor") {
  Tensor a = param(0, 3.0), b = param(0, 4.0);
  const double total = clip_grad_norm_({a, b}, 1.0);
  REQUIRE(total == Approx(5.0));
  REQUIRE(a.grad().item<double>() == Approx(0.6).epsilon(1e-5));
  REQUIRE(b.grad().item<double>() == Approx(0.8).epsilon(1e-5));
  REQUIRE(clip_grad_norm_({a, b}, 10.0) == Approx(1.0).epsilon(1e-5));  // below the limit: unchanged
  REQUIRE(a.grad().item<double>() == Approx(0.6).epsilon(1e-5));
}

TEST_CASE("clipping's pieces: the squared norm, the coefficient, the scaling") {
  Tensor a = param(0, 3.0), b = param(0, 4.0);
  Tensor none = Tensor::zeros({1}, DType::Float64);  // no gradient: counts 0
  REQUIRE(grad_norm_squared({a, b, none}) == 25.0);
  REQUIRE(clip_coefficient(5.0, 1.0) == 1.0 / (5.0 + 1e-6));
  REQUIRE(clip_coefficient(1.0, 10.0) == 1.0);  // under the limit: unchanged
  scale_grads_({a, b, none}, 0.5);
  REQUIRE(a.grad().item<double>() == 1.5);
  REQUIRE(b.grad().item<double>() == 2.0);
  REQUIRE_FALSE(none.grad().defined());
}

TEST_CASE("a small MLP learns XOR exactly") {
  manual_seed(3);
  Sequential model({std::make_shared<Linear>(2, 8), std::make_shared<ReLU>(), std::make_shared<Linear>(8, 2)});
  const Tensor x = Tensor::from_vector<float>({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2});
  const Tensor y = Tensor::from_vector<std::int64_t>({0, 1, 1, 0}, {4});
  Adam adam({{model.parameters()}}, AdamOptions{0.05});
  for (int step = 0; step < 500; ++step) {
    const Tensor loss = cross_entropy(model(x), y);
    adam.zero_grad();
    backward(loss);
    adam.step();
  }
  const std::vector<float> logits = model(x).to_vector<float>();
  for (int i = 0; i < 4; ++i) {
    const int predicted = logits[static_cast<std::size_t>(2 * i + 1)] > logits[static_cast<std::size_t>(2 * i)] ? 1 : 0;
    REQUIRE(predicted == y.to_vector<std::int64_t>()[static_cast<std::size_t>(i)]);
  }
  REQUIRE(cross_entropy(model(x), y).item<double>() < 0.01);
}
