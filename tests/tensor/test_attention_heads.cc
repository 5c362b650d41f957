// The plan of the CUDA attention (tensor/attention.cu), run on the CPU: q, k and v moved into
// the heads layout by token_block_start, each product one gemm_batched over all B H heads with
// heads_gemm's shapes and strides (the CPU runs the entries one by one; cuBLAS runs the same
// arguments in one call), the masked softmax written out here, the results moved back. Forward
// and backward must equal the CPU kernel, which takes per-head GEMMs on strided rows of qkv
// (tensor/attention.cc), in float64.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/attention.h"
#include "tensor/attention_heads.h"
#include "tensor/random.h"

using namespace ringgrad;
namespace k = ringgrad::kernels;
using k::AttentionDims;
using k::HeadsProduct;

namespace {

using Buffer = std::vector<double>;

// [B, T, parts C] -> [parts, B, H, T, hs].
Buffer to_heads(const AttentionDims& d, std::int64_t parts, const double* tokens) {
  Buffer heads(static_cast<std::size_t>(parts * d.b * d.h * d.t * d.hs));
  for (std::int64_t block = 0; block < parts * d.b * d.h; ++block) {
    for (std::int64_t t = 0; t < d.t; ++t) {
      for (std::int64_t e = 0; e < d.hs; ++e) {
        heads[static_cast<std::size_t>((block * d.t + t) * d.hs + e)] =
            tokens[k::token_block_start(d, parts, block) + t * parts * d.c + e];
      }
    }
  }
  return heads;
}

// [parts, B, H, T, hs] -> `tokens` [B, T, parts C].
void from_heads(const AttentionDims& d, std::int64_t parts, const Buffer& heads, double* tokens) {
  for (std::int64_t block = 0; block < parts * d.b * d.h; ++block) {
    for (std::int64_t t = 0; t < d.t; ++t) {
      for (std::int64_t e = 0; e < d.hs; ++e) {
        tokens[k::token_block_start(d, parts, block) + t * parts * d.c + e] =
            heads[static_cast<std::size_t>((block * d.t + t) * d.hs + e)];
      }
    }
  }
}

void gemm(const AttentionDims& d, HeadsProduct product, double alpha, const double* a, const double* b, double* c) {
  const k::HeadsGemm<double> g = k::heads_gemm(d, product, alpha, a, b, c);
  k::gemm_batched(kCPU, g.args, g.batch);
}

// Row r of the [B, H, T, T] scores is time step r % T: softmax over its first r % T + 1 entries.
void causal_softmax(const AttentionDims& d, Buffer& s) {
  for (std::int64_t r = 0; r < d.b * d.h * d.t; ++r) {
    double* row = s.data() + r * d.t;
    const std::int64_t n = r % d.t + 1;
    const double mx = *std::max_element(row, row + n);
    double sum = 0;
    for (std::int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - mx);
    for (std::int64_t j = 0; j < d.t; ++j) row[j] = j < n ? row[j] / sum : 0;
  }
}

// dS = P (dP - rowsum(dP P)) on each row's causal prefix, in place on dP.
void causal_softmax_backward(const AttentionDims& d, const double* p, Buffer& ds) {
  for (std::int64_t r = 0; r < d.b * d.h * d.t; ++r) {
    double* g = ds.data() + r * d.t;
    const double* pr = p + r * d.t;
    double dot = 0;
    for (std::int64_t j = 0; j < d.t; ++j) dot += g[j] * pr[j];
    for (std::int64_t j = 0; j < d.t; ++j) g[j] = pr[j] * (g[j] - dot);
  }
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

Tensor random(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  Tensor t = Tensor::empty(shape, DType::Float64);
  k::uniform_(t, -2, 2, gen);  // scores of a few units: the softmax neither flat nor one-hot
  return t;
}

}  // namespace

TEST_CASE("attention heads layout: each block starts where the token layout puts its (part, batch, head)") {
  const AttentionDims d{3, 5, 12, 4, 3};
  for (std::int64_t parts : {1, 3}) {
    for (std::int64_t p = 0; p < parts; ++p) {
      for (std::int64_t b = 0; b < d.b; ++b) {
        for (std::int64_t h = 0; h < d.h; ++h) {
          INFO("parts " << parts << ", p " << p << ", b " << b << ", h " << h);
          // Element (b, t = 0, p, h, e = 0) of [B, T, P, H, hs].
          CHECK(k::token_block_start(d, parts, (p * d.b + b) * d.h + h) == ((b * d.t * parts + p) * d.h + h) * d.hs);
        }
      }
    }
  }
}

TEST_CASE("attention heads layout: one batched GEMM per product equals the per-head CPU kernel, forward and backward") {
  struct Case {
    std::int64_t b, t, heads, hs;
  };
  for (const Case c : {Case{1, 1, 1, 4}, Case{2, 37, 3, 8}, Case{3, 70, 4, 16}, Case{2, 33, 1, 5}}) {
    const std::int64_t channels = c.heads * c.hs;
    const AttentionDims d{c.b, c.t, channels, c.heads, c.hs};
    INFO("B " << c.b << ", T " << c.t << ", " << c.heads << " heads of " << c.hs);
    const Tensor qkv = random({c.b, c.t, 3 * channels}, 70 + static_cast<std::uint64_t>(c.t));
    const Tensor dy = random({c.b, c.t, channels}, 71);
    const double scale = 1 / std::sqrt(static_cast<double>(c.hs));
    const std::int64_t n = c.b * c.heads * c.t * c.hs;  // elements of q in the heads layout

    // Forward: S = Q K^T / sqrt(hs), P = softmax, Y = P V.
    const Buffer heads = to_heads(d, 3, qkv.data<double>());
    const double *q = heads.data(), *kk = q + n, *v = kk + n;
    Buffer att(static_cast<std::size_t>(c.b * c.heads * c.t * c.t)), yh(static_cast<std::size_t>(n));
    gemm(d, HeadsProduct::kRowsRowsT, scale, q, kk, att.data());
    causal_softmax(d, att);
    gemm(d, HeadsProduct::kScoresRows, 1, att.data(), v, yh.data());
    Tensor y = Tensor::empty({c.b, c.t, channels}, DType::Float64);
    from_heads(d, 1, yh, y.data<double>());

    const k::AttentionOutput expected = k::causal_attention(qkv, c.heads);
    CHECK(max_abs_diff(y, expected.y) < 1e-12);
    CHECK(max_abs_diff(Tensor::from_vector(att, expected.att.shape()), expected.att) < 1e-12);

    // Backward: dP = dY V^T, dV = P^T dY, dS, dQ = dS K / sqrt(hs), dK = dS^T Q / sqrt(hs).
    const Buffer g = to_heads(d, 1, dy.data<double>());
    Buffer ds(att.size()), grads(static_cast<std::size_t>(3 * n));
    double *dq = grads.data(), *dk = dq + n, *dv = dk + n;
    gemm(d, HeadsProduct::kRowsRowsT, 1, g.data(), v, ds.data());
    gemm(d, HeadsProduct::kScoresTRows, 1, att.data(), g.data(), dv);
    causal_softmax_backward(d, att.data(), ds);
    gemm(d, HeadsProduct::kScoresRows, scale, ds.data(), kk, dq);
    gemm(d, HeadsProduct::kScoresTRows, scale, ds.data(), q, dk);
    Tensor dqkv = Tensor::empty(qkv.shape(), DType::Float64);
    from_heads(d, 3, grads, dqkv.data<double>());

    CHECK(max_abs_diff(dqkv, k::causal_attention_backward(dy, qkv, expected.att, c.heads)) < 1e-12);
  }
}
