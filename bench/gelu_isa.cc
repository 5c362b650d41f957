// GELU's loops built for each x86-64 level, baseline (SSE2), v3 (AVX2) and v4 (AVX-512), timed
// side by side on one MLP activation of the baby GPT ([12, 64, 512] floats): the value alone
// (evaluation), the value with its slope (a training forward, tensor/elementwise.cc), and the
// gradient recomputed from the input (the backward before the slope was kept). What
// tensor/cpu_clones.h's builds of GELU are worth on this CPU, and the time an AVX2-only
// machine's build would take here. GCC's resolver runs one build per function; this
// program calls each build by name. Compiled as tensor/ is (no fused multiply-add, no trapping
// math), so each build is the one the library would pick, and every build's results must be the
// same bits: it exits 1 when one differs.
//   gelu_isa [--rounds 15] [--elements 393216]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cli/parse.h"
#include "tensor/gelu.h"

namespace {

namespace k = ringgrad::kernels;

// One build's three loops. x is the input, g the incoming gradient; y and s the outputs.
struct Loops {
  void (*value)(const float* x, float* y, std::int64_t n);
  void (*with_slope)(const float* x, float* y, float* s, std::int64_t n);
  void (*recomputed)(const float* g, const float* x, float* y, std::int64_t n);
};

#define GELU_BUILD(name, isa)                                                                              \
  __attribute__((target(isa), noinline)) void name##_value(const float* x, float* y, std::int64_t n) {       \
    for (std::int64_t i = 0; i < n; ++i) y[i] = k::gelu_value(x[i]);                                         \
  }                                                                                                          \
  __attribute__((target(isa), noinline)) void name##_with_slope(const float* x, float* y, float* s,           \
                                                                std::int64_t n) {                             \
    for (std::int64_t i = 0; i < n; ++i) {                                                                   \
      const float t = k::gelu_tanh(k::gelu_inner(x[i]));                                                     \
      y[i] = k::gelu_value_given_tanh(x[i], t);                                                              \
      s[i] = k::gelu_slope_given_tanh(x[i], t);                                                              \
    }                                                                                                        \
  }                                                                                                          \
  __attribute__((target(isa), noinline)) void name##_recomputed(const float* g, const float* x, float* y,     \
                                                                std::int64_t n) {                             \
    for (std::int64_t i = 0; i < n; ++i) y[i] = k::gelu_grad(g[i], x[i]);                                    \
  }                                                                                                          \
  constexpr Loops name##_loops{name##_value, name##_with_slope, name##_recomputed};
GELU_BUILD(baseline, "arch=x86-64")
GELU_BUILD(avx2, "arch=x86-64-v3")
GELU_BUILD(avx512, "arch=x86-64-v4")

struct Build {
  std::string name;
  bool runs_here;
  Loops loops;
};

// Every output of one build's loops, for comparing builds bit for bit.
struct Outputs {
  std::vector<float> value, with_slope_y, with_slope_s, recomputed;
  explicit Outputs(std::size_t n) : value(n), with_slope_y(n), with_slope_s(n), recomputed(n) {}
  bool operator==(const Outputs& o) const {
    const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    return same(value, o.value) && same(with_slope_y, o.with_slope_y) && same(with_slope_s, o.with_slope_s) &&
           same(recomputed, o.recomputed);
  }
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
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;

  __builtin_cpu_init();
  const std::vector<Build> builds = {
      {"baseline (SSE2)", true, baseline_loops},
      {"x86-64-v3 (AVX2)", __builtin_cpu_supports("x86-64-v3") != 0, avx2_loops},  // the whole level, as the resolver asks
      {"x86-64-v4 (AVX-512)", __builtin_cpu_supports("x86-64-v4") != 0, avx512_loops},
  };
  const auto size = static_cast<std::size_t>(n);
  std::vector<float> x(size), g(size);
  for (std::size_t i = 0; i < size; ++i) {  // pre-activations across GELU's bend, and its saturation
    x[i] = -9.0f + 18.0f * static_cast<float>(i % 4096) / 4095.0f;
    g[i] = 1.0f / static_cast<float>(1 + i % 7);
  }
  const auto run = [&](const Loops& l, Outputs& o) -> std::array<std::function<void()>, 3> {
    return {[&] { l.value(x.data(), o.value.data(), n); },
            [&] { l.with_slope(x.data(), o.with_slope_y.data(), o.with_slope_s.data(), n); },
            [&] { l.recomputed(g.data(), x.data(), o.recomputed.data(), n); }};
  };
  std::vector<Outputs> outputs(builds.size(), Outputs(size));
  std::vector<std::array<std::vector<double>, 3>> times(builds.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t b = 0; b < builds.size(); ++b) {
      if (!builds[b].runs_here) continue;
      const auto loops = run(builds[b].loops, outputs[b]);
      for (std::size_t i = 0; i < loops.size(); ++i) times[b][i].push_back(microseconds(loops[i]));
    }
  }
  fmt::print("GELU on {} floats, median of {} interleaved rounds (us per call)\n", n, rounds);
  fmt::print("{:<22}{:>8}{:>13}{:>13}  {}\n", "build", "value", "with slope", "grad from x", "bits equal to the baseline's");
  bool all_same = true;
  for (std::size_t b = 0; b < builds.size(); ++b) {
    if (!builds[b].runs_here) {
      fmt::print("{:<22}{:>8}{:>13}{:>13}  (this CPU lacks it)\n", builds[b].name, "-", "-", "-");
      continue;
    }
    const bool same = outputs[b] == outputs[0];
    fmt::print("{:<22}{:>8.1f}{:>13.1f}{:>13.1f}  {}\n", builds[b].name, median(times[b][0]), median(times[b][1]),
               median(times[b][2]), same ? "yes" : "NO");
    all_same = all_same && same;
  }
  return all_same ? 0 : 1;
}
