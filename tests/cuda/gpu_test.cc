// The GPU tests' shared helpers: the skip (its reason printed once) when no GPU is visible, seeded
// random inputs made on the CPU, and compare(), which reports the element furthest outside the
// tolerance.
#include "gpu_test.h"

#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.h"
#include "tensor/cuda_runtime.h"
#include "tensor/random.h"

namespace ringgrad::testing {

bool gpu_available() {
  if (cuda::device_count() > 0) return true;
  static const bool printed = [] {
    fmt::print("skipped: {}\n", cuda::unavailable_reason());
    return true;
  }();
  static_cast<void>(printed);
  return false;
}

Device gpu() { return cuda_device(0); }

Tensor to_gpu(const Tensor& t) { return t.to(gpu()); }

Tensor random_tensor(const Shape& shape, std::uint64_t seed, DType dtype, double low, double high) {
  Generator gen(seed);
  Tensor t = Tensor::empty(shape, dtype);
  kernels::uniform_(t, low, high, gen);
  return t;
}

Tensor random_param(const Shape& shape, std::uint64_t seed, DType dtype) {
  Tensor t = random_tensor(shape, seed, dtype);
  t.set_requires_grad(true);
  return t;
}

Tensor random_indices(const Shape& shape, std::int64_t n, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<std::int64_t> values(static_cast<std::size_t>(numel(shape)));
  for (auto& v : values) v = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(n)));
  return Tensor::from_vector(values, shape);
}

std::string compare(const Tensor& gpu, const Tensor& cpu, Tolerance tol) {
  if (gpu.shape() != cpu.shape()) {
    return fmt::format("shapes differ: {} on {}, {} on {}", shape_str(gpu.shape()), gpu.device().str(),
                       shape_str(cpu.shape()), cpu.device().str());
  }
  const std::vector<double> g = gpu.to_vector<double>(), c = cpu.to_vector<double>();
  std::size_t worst = 0;
  double worst_excess = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double excess = std::abs(g[i] - c[i]) - (tol.atol + tol.rtol * std::abs(c[i]));
    if (excess > worst_excess || std::isnan(g[i]) != std::isnan(c[i])) {
      worst = i, worst_excess = std::isnan(excess) ? INFINITY : excess;
    }
  }
  if (worst_excess == 0) return "";
  return fmt::format("element {} of {}: {} on {}, {} on {} (|diff| {:.3g} > atol {} + rtol {} * |reference|)", worst,
                     shape_str(cpu.shape()), g[worst], gpu.device().str(), c[worst], cpu.device().str(),
                     std::abs(g[worst] - c[worst]), tol.atol, tol.rtol);
}

std::string compare_with_cpu(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                             const std::vector<Tensor>& inputs, Tolerance tol) {
  std::vector<Tensor> on_cpu, on_gpu;
  for (const Tensor& x : inputs) {
    Tensor c = x.detach(), g = to_gpu(x);
    if (x.requires_grad()) c.set_requires_grad(true), g.set_requires_grad(true);
    on_cpu.push_back(c);
    on_gpu.push_back(g);
  }
  const Tensor y_cpu = f(on_cpu), y_gpu = f(on_gpu);
  if (y_gpu.device() != gpu()) return "the result is on " + y_gpu.device().str() + ", not on " + gpu().str();
  if (std::string m = compare(y_gpu, y_cpu, tol); !m.empty()) return "forward: " + m;
  if (!y_cpu.requires_grad()) return "";

  const Tensor dy = random_tensor(y_cpu.shape(), 4321, y_cpu.dtype());
  backward(y_cpu, dy);
  backward(y_gpu, to_gpu(dy));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    if (on_gpu[i].grad().device() != gpu()) return fmt::format("gradient of input {} is not on the GPU", i);
    if (std::string m = compare(on_gpu[i].grad(), on_cpu[i].grad(), tol); !m.empty()) {
      return fmt::format("gradient of input {}: {}", i, m);
    }
  }
  return "";
}

}  // namespace ringgrad::testing
