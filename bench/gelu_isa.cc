// GELU's forward and backward loops built for each x86-64 level, baseline (SSE2), v3 (AVX2)
// and v4 (AVX-512), timed side by side on one MLP activation of the baby GPT ([12, 64, 512]
// floats): what tensor/cpu_clones.h's builds of GELU are worth on this CPU, and the time an
// AVX2-only machine's build would take here. GCC's resolver runs one build per function; this
// program calls each build by name. Compiled as tensor/ is (no fused multiply-add, no trapping
// math), so each build is the one the library would pick, and every build's results must be the
// same bits: it exits 1 when one differs.
//   gelu_isa [--rounds 15] [--elements 393216]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tensor/gelu.h"

namespace {

using ringgrad::kernels::gelu_grad;
using ringgrad::kernels::gelu_value;

#define GELU_BUILD(name, isa)                                                                  \
  __attribute__((target(isa), noinline)) void name##_forward(const float* x, float* y, std::int64_t n) { \
    for (std::int64_t i = 0; i < n; ++i) y[i] = gelu_value(x[i]);                                \
  }                                                                                                \
  __attribute__((target(isa), noinline)) void name##_backward(const float* g, const float* x, float* out, \
                                                                 std::int64_t n) {               \
    for (std::int64_t i = 0; i < n; ++i) out[i] = gelu_grad(g[i], x[i]);                         \
  }
GELU_BUILD(baseline, "arch=x86-64")
GELU_BUILD(avx2, "arch=x86-64-v3")
GELU_BUILD(avx512, "arch=x86-64-v4")

struct Build {
  std::string name;
  bool runs_here;
  void (*forward)(const float*, float*, std::int64_t);
  void (*backward)(const float*, const float*, float*, std::int64_t);
};

double microseconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GELU's loops built for each x86-64 level, timed side by side"};
  int rounds = 15;
  std::int64_t n = 12 * 64 * 512;
  app.add_option("--rounds", rounds, "Interleaved rounds; each times every build once")->check(CLI::PositiveNumber);
  app.add_option("--elements", n, "Floats per call (default: the baby GPT's MLP activation)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  __builtin_cpu_init();
  const std::vector<Build> builds = {
      {"baseline (SSE2)", true, baseline_forward, baseline_backward},
      {"x86-64-v3 (AVX2)", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), avx2_forward, avx2_backward},
      {"x86-64-v4 (AVX-512)", __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"),
       avx512_forward, avx512_backward},
  };
  const auto size = static_cast<std::size_t>(n);
  std::vector<float> x(size), g(size), y(size), dx(size), y0(size), dx0(size);
  for (std::size_t i = 0; i < size; ++i) {  // pre-activations across GELU's bend, and its saturation
    x[i] = -9.0f + 18.0f * static_cast<float>(i % 4096) / 4095.0f;
    g[i] = 1.0f / static_cast<float>(1 + i % 7);
  }
  builds[0].forward(x.data(), y0.data(), n);
  builds[0].backward(g.data(), x.data(), dx0.data(), n);

  std::vector<std::vector<double>> fwd(builds.size()), bwd(builds.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t b = 0; b < builds.size(); ++b) {
      if (!builds[b].runs_here) continue;
      fwd[b].push_back(microseconds([&] { builds[b].forward(x.data(), y.data(), n); }));
      bwd[b].push_back(microseconds([&] { builds[b].backward(g.data(), x.data(), dx.data(), n); }));
    }
  }
  fmt::print("GELU on {} floats, median of {} interleaved rounds (us per call)\n", n, rounds);
  fmt::print("{:<22}{:>10}{:>10}  {}\n", "build", "forward", "backward", "bits equal to the baseline's");
  bool all_same = true;
  for (std::size_t b = 0; b < builds.size(); ++b) {
    if (!builds[b].runs_here) {
      fmt::print("{:<22}{:>10}{:>10}  (this CPU lacks it)\n", builds[b].name, "-", "-");
      continue;
    }
    builds[b].forward(x.data(), y.data(), n);
    builds[b].backward(g.data(), x.data(), dx.data(), n);
    const bool same = std::memcmp(y.data(), y0.data(), size * sizeof(float)) == 0 &&
                      std::memcmp(dx.data(), dx0.data(), size * sizeof(float)) == 0;
    fmt::print("{:<22}{:>10.1f}{:>10.1f}  {}\n", builds[b].name, median(fwd[b]), median(bwd[b]), same ? "yes" : "NO");
    all_same = all_same && same;
  }
  return all_same ? 0 : 1;
}
