// gradcheck: each input element moved by h both ways, (f(x+h) - f(x-h)) / 2h compared with
// autograd's gradient of sum(f(x) * w) for a fixed random w; the report names the first element
// outside the tolerance.
#include "support/gradcheck.h"

#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "tensor/random.h"
#include "tensor/reduce.h"
#include "tensor/elementwise.h"

namespace ringgrad::testing {

Tensor random_input(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  Tensor t = Tensor::zeros(shape, DType::Float64);
  kernels::uniform_(t, -1.0, 1.0, gen);
  t.set_requires_grad(true);
  return t;
}

std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                      const std::vector<Tensor>& inputs, double atol, double rtol) {
  // A fixed random weighting of the outputs turns f into a scalar.
  Tensor probe = f(inputs);
  Generator gen(1234);
  Tensor w = Tensor::zeros(probe.shape(), DType::Float64);
  kernels::uniform_(w, -1.0, 1.0, gen);
  auto scalar = [&](const std::vector<Tensor>& xs) { return sum(mul(f(xs), w)); };

  for (Tensor x : inputs) x.set_grad(Tensor());
  backward(scalar(inputs));

  NoGradGuard no_grad;
  constexpr double h = 1e-6;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.requires_grad()) continue;
    const std::vector<double> analytic = x.grad().to_vector<double>();
    double* data = x.data<double>();  // inputs are contiguous float64
    for (std::int64_t j = 0; j < x.numel(); ++j) {
      const double saved = data[j];
      data[j] = saved + h;
      const double plus = scalar(inputs).item<double>();
      data[j] = saved - h;
      const double minus = scalar(inputs).item<double>();
      data[j] = saved;
      const double numeric = (plus - minus) / (2 * h);
      if (std::abs(analytic[static_cast<std::size_t>(j)] - numeric) > atol + rtol * std::abs(numeric)) {
        return fmt::format("input {} element {}: autograd {:.10g}, central difference {:.10g}", i, j,
                           analytic[static_cast<std::size_t>(j)], numeric);
      }
    }
  }
  return "";
}

}  // namespace ringgrad::testing
