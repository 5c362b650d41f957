// The Generator's draws: each is a hash of (seed, counter), so a value depends on its position
// only; normals by Box-Muller, integers below n by rejection, and the uniform_ and normal_ fills.
#include "tensor/random.h"

#include <cmath>
#include <numbers>
#include <utility>

#include "tensor/counter_rng.h"
#include "tensor/strided_loop.h"
#include "tensor/view.h"

namespace ringgrad {

// Each draw is a hash of (seed, counter), independent of the others' order (counter_rng.h).
std::uint64_t Generator::next_u64() { return splitmix64(seed_, ++offset_); }

double Generator::next_double() { return uniform_double(seed_, ++offset_); }

double Generator::next_normal() {
  const double u1 = 1.0 - next_double();  // in (0, 1], so log is finite
  const double u2 = next_double();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::uint64_t Generator::next_below(std::uint64_t n) {
  // Rejection keeps the result unbiased when n does not divide 2^64.
  const std::uint64_t limit = -n % n;
  while (true) {
    const std::uint64_t r = next_u64();
    if (r >= limit) return r % n;
  }
}

Generator& default_generator() {
  static Generator gen(0);
  return gen;
}

void manual_seed(std::uint64_t seed) { default_generator() = Generator(seed); }

namespace kernels {
namespace {
// Values go in row-major order whatever the strides, so a tensor gets the same values on any
// device. A GPU tensor is filled on the CPU and copied over: this only runs when a model is
// initialised, so a kernel would buy nothing but a second implementation to keep in step.
template <typename Draw>
void fill_random(const Tensor& t, const char* op, Draw draw) {
  if (t.is_cuda()) {
    const Tensor host = Tensor::empty(t.shape(), t.dtype());
    fill_random(host, op, draw);
    copy_(t, host);
    return;
  }
  dispatch_floating(t.dtype(), op, [&]<typename T>() {
    T* base = reinterpret_cast<T*>(t.storage()->data());
    for_each_row<1>(t.shape(), {t.strides()}, {t.offset()}, [&](auto off, std::int64_t n, auto step) {
      for (std::int64_t j = 0; j < n; ++j) base[off[0] + j * step[0]] = static_cast<T>(draw());
    });
  });
}
}  // namespace

void uniform_(const Tensor& t, double low, double high, Generator& gen) {
  fill_random(t, "uniform_", [&] { return low + (high - low) * gen.next_double(); });
}

void normal_(const Tensor& t, double mean, double std, Generator& gen) {
  fill_random(t, "normal_", [&] { return mean + std * gen.next_normal(); });
}
}  // namespace kernels

std::vector<std::int64_t> randperm(std::int64_t n, Generator& gen) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

}  // namespace ringgrad
