// The tile kernels of tensor/attention_tiles.h: two 4 x 16 product tiles (rows times a
// transposed operand; coefficients times rows), the masked softmax and its backward on padded
// rows, and the per-head loops that string them together as attention.cc's GEMM path does.
#include "tensor/attention_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

// The 8-lane vectors below are passed only between functions built for AVX2 (and always inlined
// into them): GCC's warning that their ABI would differ without AVX does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "tensor/env_switch.h"
#include "tensor/exp_poly.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__)

namespace ringgrad::kernels {
namespace {

bool tiles_allowed() {
  return env_switch("RINGGRAD_ATTENTION_TILES", "the GEMM path",
                    "the default: register tiles where the CPU has AVX2 and FMA");
}

// Built for AVX2 with FMA whatever the rest of the library is built for; only called where the
// CPU has both. fp-contract=fast turns each `acc += a * b` into one FMA, as GEMM kernels do.
#define RINGGRAD_TILES __attribute__((target("arch=x86-64-v3"), optimize("fp-contract=fast")))

typedef float F8 __attribute__((vector_size(32)));          // 8 float lanes: one AVX register
typedef std::int32_t I8 __attribute__((vector_size(32)));   // their masks

constexpr std::int64_t kRows = 4;    // rows of a tile
constexpr std::int64_t kWidth = 16;  // columns of a tile: two F8s

std::int64_t padded(std::int64_t n) { return (n + kWidth - 1) / kWidth * kWidth; }

RINGGRAD_TILES inline F8 load(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
RINGGRAD_TILES inline void store(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
RINGGRAD_TILES inline F8 splat(float x) { return F8{x, x, x, x, x, x, x, x}; }
// Lanes j0 .. j0 + 7 that are at most t: the causal prefix of row t.
RINGGRAD_TILES inline I8 up_to(std::int64_t j0, std::int64_t t) {
  const I8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  return lane + static_cast<std::int32_t>(j0) <= static_cast<std::int32_t>(t);
}
RINGGRAD_TILES inline float lanes_max(F8 v) {
  float m = v[0];
  for (int l = 1; l < 8; ++l) m = v[l] > m ? v[l] : m;
  return m;
}
RINGGRAD_TILES inline float lanes_sum(F8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// out[r][0..16) = sum over d < depth of a[r][d] * bt[d][0..16) for r < rows: 16 columns of a
// product with the transposed operand bt, a's rows at stride lda, bt's at ldb, out's at ldo.
RINGGRAD_TILES void rows_times_transposed(const float* a, std::int64_t lda, const float* bt, std::int64_t ldb,
                                          std::int64_t depth, std::int64_t rows, float* out, std::int64_t ldo) {
  const float* row[kRows];
  for (std::int64_t r = 0; r < kRows; ++r) row[r] = a + std::min(r, rows - 1) * lda;  // spare rows repeat the last
  F8 acc[kRows][2];
  for (auto& tile_row : acc) tile_row[0] = tile_row[1] = F8{};
  for (std::int64_t d = 0; d < depth; ++d) {
    const F8 b0 = load(bt + d * ldb), b1 = load(bt + d * ldb + 8);
    for (std::int64_t r = 0; r < kRows; ++r) {
      const F8 x = splat(row[r][d]);
      acc[r][0] += x * b0, acc[r][1] += x * b1;
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) store(out + r * ldo, acc[r][0]), store(out + r * ldo + 8, acc[r][1]);
}

// out[r][0..16) = sum over j in [lo, hi) of coef(r, j) * b[j][0..16) for r < rows, where
// coef(r, j) = cf[r * step_r + j * step_j] (P's rows for P V, its columns for P^T dY).
RINGGRAD_TILES void coefficients_times_rows(const float* cf, std::int64_t step_r, std::int64_t step_j, std::int64_t lo,
                                            std::int64_t hi, std::int64_t rows, const float* b, std::int64_t ldb,
                                            float* out, std::int64_t ldo) {
  const float* coef[kRows];
  for (std::int64_t r = 0; r < kRows; ++r) coef[r] = cf + std::min(r, rows - 1) * step_r;
  F8 acc[kRows][2];
  for (auto& tile_row : acc) tile_row[0] = tile_row[1] = F8{};
  for (std::int64_t j = lo; j < hi; ++j) {
    const F8 b0 = load(b + j * ldb), b1 = load(b + j * ldb + 8);
    for (std::int64_t r = 0; r < kRows; ++r) {
      const F8 x = splat(coef[r][j * step_j]);
      acc[r][0] += x * b0, acc[r][1] += x * b1;
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) store(out + r * ldo, acc[r][0]), store(out + r * ldo + 8, acc[r][1]);
}

// Row t of P from its scores s[0..w) (w a multiple of 16, at least t + 1): the softmax of
// s[0..t], zero beyond, written to p[0..t_len).
RINGGRAD_TILES void softmax_row(float* s, std::int64_t w, std::int64_t t, float* p, std::int64_t t_len) {
  const F8 minus_inf = splat(-std::numeric_limits<float>::infinity());
  F8 m = minus_inf;
  for (std::int64_t j = 0; j < w; j += 8) {
    const F8 x = load(s + j);
    m = up_to(j, t) ? (x > m ? x : m) : m;
  }
  const F8 mx = splat(lanes_max(m));
  F8 sum = {};
  for (std::int64_t j = 0; j < w; j += 8) {
    const F8 e = up_to(j, t) ? exp_poly<F8, I8>(load(s + j) - mx) : F8{};
    store(s + j, e);
    sum += e;
  }
  const float inv = 1 / lanes_sum(sum);
  const std::int64_t written = std::min(w, t_len), whole = written / 8 * 8;  // p's row may end inside a tile
  for (std::int64_t j = 0; j < whole; j += 8) store(p + j, load(s + j) * splat(inv));
  for (std::int64_t j = whole; j < written; ++j) p[j] = s[j] * inv;
  std::fill(p + written, p + t_len, 0.0f);
}

// Row t of dS from dP's row ds[0..w) and P's row p[0..w) (zero past t):
// scale * P (dP - sum(dP P)), in place.
RINGGRAD_TILES void softmax_backward_row(const float* p, float* ds, std::int64_t w, float scale) {
  F8 dot = {};
  for (std::int64_t j = 0; j < w; j += 8) dot += load(ds + j) * load(p + j);
  const F8 total = splat(lanes_sum(dot)), sc = splat(scale);
  for (std::int64_t j = 0; j < w; j += 8) store(ds + j, sc * (load(p + j) * (load(ds + j) - total)));
}

// at[d][j] = x[j][d] * scale for j < t_len, zero for j up to padded(t_len): a head's K or V,
// read across by rows_times_transposed.
void transpose_head(const float* x, std::int64_t row, std::int64_t t_len, std::int64_t hs, float scale, float* at) {
  const std::int64_t tp = padded(t_len);
  for (std::int64_t d = 0; d < hs; ++d) {
    for (std::int64_t j = 0; j < t_len; ++j) at[d * tp + j] = x[j * row + d] * scale;
    std::fill(at + d * tp + t_len, at + (d + 1) * tp, 0.0f);
  }
}

// One head: q, k, v rows at stride `row`, y's at `ldy`, p its T x T probabilities.
void head_forward(const float* q, const float* k, const float* v, std::int64_t row, std::int64_t t_len,
                  std::int64_t hs, float* y, std::int64_t ldy, float* p, float* kt, float* s) {
  const std::int64_t tp = padded(t_len);
  transpose_head(k, row, t_len, hs, 1 / std::sqrt(static_cast<float>(hs)), kt);  // the scale rides on K^T
  for (std::int64_t i0 = 0; i0 < t_len; i0 += kRows) {  // rows [i0, i0 + rows) see keys [0, n)
    const std::int64_t rows = std::min(kRows, t_len - i0), n = i0 + rows, w = padded(n);
    for (std::int64_t j0 = 0; j0 < w; j0 += kWidth) rows_times_transposed(q + i0 * row, row, kt + j0, tp, hs, rows, s + j0, tp);
    for (std::int64_t r = 0; r < rows; ++r) softmax_row(s + r * tp, w, i0 + r, p + (i0 + r) * t_len, t_len);
    for (std::int64_t c0 = 0; c0 < hs; c0 += kWidth) {  // Y = P V
      coefficients_times_rows(p + i0 * t_len, t_len, 1, 0, n, rows, v + c0, row, y + i0 * ldy + c0, ldy);
    }
  }
}

// One head's dq, dk, dv (at stride `row`, like q, k, v) from dy (at `ldy`) and p.
void head_backward(const float* q, const float* k, const float* v, const float* dy, std::int64_t ldy, const float* p,
                   std::int64_t row, std::int64_t t_len, std::int64_t hs, float* dq, float* dk, float* dv, float* vt,
                   float* ds, float* p_row) {
  const std::int64_t tp = padded(t_len);
  const float scale = 1 / std::sqrt(static_cast<float>(hs));
  transpose_head(v, row, t_len, hs, 1, vt);
  for (std::int64_t i0 = 0; i0 < t_len; i0 += kRows) {
    const std::int64_t rows = std::min(kRows, t_len - i0), n = i0 + rows, w = padded(n);
    float* dsi = ds + i0 * tp;
    for (std::int64_t j0 = 0; j0 < w; j0 += kWidth) rows_times_transposed(dy + i0 * ldy, ldy, vt + j0, tp, hs, rows, dsi + j0, tp);  // dP = dY V^T
    for (std::int64_t r = 0; r < rows; ++r) {  // dS, scaled for both dQ and dK
      const float* pr = p + (i0 + r) * t_len;
      if (w > t_len) pr = static_cast<const float*>(std::memcpy(p_row, pr, static_cast<std::size_t>(t_len) * sizeof(float)));
      softmax_backward_row(pr, dsi + r * tp, w, scale);  // P's row read up to w: copied where that passes T
    }
    for (std::int64_t c0 = 0; c0 < hs; c0 += kWidth) {  // dQ = dS K
      coefficients_times_rows(dsi, tp, 1, 0, n, rows, k + c0, row, dq + i0 * row + c0, row);
    }
  }
  for (std::int64_t k0 = 0; k0 < t_len; k0 += kRows) {  // keys [k0, k0 + keys) are seen by rows [k0, T)
    const std::int64_t keys = std::min(kRows, t_len - k0);
    for (std::int64_t c0 = 0; c0 < hs; c0 += kWidth) {
      coefficients_times_rows(p + k0, 1, t_len, k0, t_len, keys, dy + c0, ldy, dv + k0 * row + c0, row);  // dV = P^T dY
      coefficients_times_rows(ds + k0, 1, tp, k0, t_len, keys, q + c0, row, dk + k0 * row + c0, row);    // dK = dS^T Q
    }
  }
}

}  // namespace

bool attention_tiles_run(DType dtype, std::int64_t hs) {
  static const bool usable = tiles_allowed() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return usable && dtype == DType::Float32 && hs > 0 && hs % kWidth == 0;
}

void attention_tiles_forward(const float* qkv, const AttentionDims& d, float* y, float* att) {
  const std::int64_t row = 3 * d.c, tp = padded(d.t);
  std::vector<float> kt(static_cast<std::size_t>(d.hs * tp)), s(static_cast<std::size_t>(kRows * tp));
  for (std::int64_t b = 0; b < d.b; ++b) {
    for (std::int64_t h = 0; h < d.h; ++h) {
      const float* q = qkv + b * d.t * row + h * d.hs;
      head_forward(q, q + d.c, q + 2 * d.c, row, d.t, d.hs, y + b * d.t * d.c + h * d.hs, d.c,
                   att + (b * d.h + h) * d.t * d.t, kt.data(), s.data());
    }
  }
}

void attention_tiles_backward(const float* dy, const float* qkv, const float* att, const AttentionDims& d,
                              float* dqkv) {
  const std::int64_t row = 3 * d.c, tp = padded(d.t);
  std::vector<float> vt(static_cast<std::size_t>(d.hs * tp)), ds(static_cast<std::size_t>(d.t * tp));
  std::vector<float> p_row(static_cast<std::size_t>(tp), 0.0f);  // past T stays zero
  for (std::int64_t b = 0; b < d.b; ++b) {
    for (std::int64_t h = 0; h < d.h; ++h) {
      const std::int64_t base = b * d.t * row + h * d.hs;
      const float* q = qkv + base;
      float* dq = dqkv + base;
      head_backward(q, q + d.c, q + 2 * d.c, dy + b * d.t * d.c + h * d.hs, d.c, att + (b * d.h + h) * d.t * d.t, row,
                    d.t, d.hs, dq, dq + d.c, dq + 2 * d.c, vt.data(), ds.data(), p_row.data());
    }
  }
}

}  // namespace ringgrad::kernels

#else  // not x86 with GCC: the GEMM path always

namespace ringgrad::kernels {

bool attention_tiles_run(DType, std::int64_t) { return false; }

void attention_tiles_forward(const float*, const AttentionDims&, float*, float*) {
  throw std::logic_error("attention_tiles_forward: built for x86 only");
}

void attention_tiles_backward(const float*, const float*, const float*, const AttentionDims&, float*) {
  throw std::logic_error("attention_tiles_backward: built for x86 only");
}

}  // namespace ringgrad::kernels

#endif
