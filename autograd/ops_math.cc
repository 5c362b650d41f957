// Element-wise ops and their derivatives. Broadcast inputs get their gradient summed back to
// their own shape (sum_to), the rule that makes `x @ W + b` give b a gradient of b's shape.
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"

namespace ringgrad {

using autograd::record;
namespace k = kernels;

Tensor add(const Tensor& a, const Tensor& b) {
  return record("add", k::add(a, b), {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return std::vector<Tensor>{k::sum_to(g, sa), k::sum_to(g, sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  return record("sub", k::sub(a, b), {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return std::vector<Tensor>{k::sum_to(g, sa), k::sum_to(k::neg(g), sb)};
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  return record("mul", k::mul(a, b), {a, b}, [a = a.detach(), b = b.detach()](const Tensor& g) {
    return std::vector<Tensor>{k::sum_to(k::mul(g, b), a.shape()), k::sum_to(k::mul(g, a), b.shape())};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  return record("div", k::div(a, b), {a, b}, [a = a.detach(), b = b.detach()](const Tensor& g) {
    // d(a/b)/db = -a / b^2
    const Tensor gb = k::neg(k::div(k::mul(g, a), k::mul(b, b)));
    return std::vector<Tensor>{k::sum_to(k::div(g, b), a.shape()), k::sum_to(gb, b.shape())};
  });
}

Tensor add(const Tensor& a, double b) {
  return record("add", k::add(a, b), {a}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor mul(const Tensor& a, double b) {
  return record("mul", k::mul(a, b), {a}, [b](const Tensor& g) { return std::vector<Tensor>{k::mul(g, b)}; });
}

Tensor pow(const Tensor& a, double exponent) {
  return record("pow", k::pow(a, exponent), {a}, [a = a.detach(), exponent](const Tensor& g) {
    return std::vector<Tensor>{k::mul(k::mul(g, k::pow(a, exponent - 1)), exponent)};
  });
}

Tensor neg(const Tensor& a) {
  return record("neg", k::neg(a), {a}, [](const Tensor& g) { return std::vector<Tensor>{k::neg(g)}; });
}

Tensor exp(const Tensor& a) {
  Tensor y = k::exp(a);
  return record("exp", y, {a}, [y = y.detach()](const Tensor& g) { return std::vector<Tensor>{k::mul(g, y)}; });
}

Tensor log(const Tensor& a) {
  return record("log", k::log(a), {a}, [a = a.detach()](const Tensor& g) {
    return std::vector<Tensor>{k::div(g, a)};
  });
}

Tensor sqrt(const Tensor& a) {
  Tensor y = k::sqrt(a);
  return record("sqrt", y, {a}, [y = y.detach()](const Tensor& g) {
    return std::vector<Tensor>{k::div(k::mul(g, 0.5), y)};
  });
}

Tensor tanh(const Tensor& a) {
  Tensor y = k::tanh(a);
  return record("tanh", y, {a}, [y = y.detach()](const Tensor& g) {
    return std::vector<Tensor>{k::mul(g, k::add(k::neg(k::mul(y, y)), 1.0))};  // 1 - y^2
  });
}

Tensor sigmoid(const Tensor& a) {
  Tensor y = k::sigmoid(a);
  return record("sigmoid", y, {a}, [y = y.detach()](const Tensor& g) {
    return std::vector<Tensor>{k::mul(g, k::mul(y, k::add(k::neg(y), 1.0)))};  // y (1 - y)
  });
}

Tensor relu(const Tensor& a) {
  return record("relu", k::relu(a), {a}, [a = a.detach()](const Tensor& g) {
    return std::vector<Tensor>{k::relu_backward(g, a)};
  });
}

Tensor gelu(const Tensor& a) {
  if (!GradMode::is_enabled() || !a.requires_grad()) return k::gelu(a);
  // The slope comes with the value (one tanh per element, not one each way) and is kept instead
  // of the input, the same size: backward is then one multiply, bit for bit gelu_backward(g, a).
  k::GeluWithSlope out = k::gelu_with_slope(a);
  return record("gelu", out.y, {a}, [slope = out.slope](const Tensor& g) {
    return std::vector<Tensor>{k::mul(g, slope)};
  });
}

}  // namespace ringgrad
