// Reductions over a row in 8 independent lanes. A plain `s += f(i)` loop is one chain of
// dependent adds that the compiler may not reorder (no -ffast-math), so it neither pipelines
// nor vectorises; 8 partial results, combined at the end, do both. The order of the additions
// is fixed, so results are deterministic. Always inlined, so a loop built for an instruction set
// (cpu_clones.h) runs them in that set too, not as calls to the baseline build.
#pragma once

#include <cstdint>

namespace ringgrad::kernels {

/// sum of f(i) for 0 <= i < n.
template <typename T, typename F>
[[gnu::always_inline]] inline T sum_lanes(std::int64_t n, F f) {
  T lane[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) lane[l] += f(i + l);
  }
  T s = 0;
  for (; i < n; ++i) s += f(i);
  for (int l = 0; l < 8; ++l) s += lane[l];
  return s;
}

/// max of x[i] for 0 <= i < n (n >= 1).
template <typename T>
[[gnu::always_inline]] inline T max_lanes(const T* x, std::int64_t n) {
  T lane[8];
  for (int l = 0; l < 8; ++l) lane[l] = x[0];
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
  }
  T m = x[0];
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int l = 0; l < 8; ++l) m = lane[l] > m ? lane[l] : m;
  return m;
}

}  // namespace ringgrad::kernels
