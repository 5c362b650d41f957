// Muon's Newton-Schulz iteration against the closed form, in float64: for G = U S V^T the
// iteration maps each singular value s alone (X X^T X keeps U and V), so its output must be
// U p5(S / ||G||_F) V^T, with p(x) = a x + b x^3 + c x^5 applied five times. The reference
// takes U and V from a Jacobi eigendecomposition of G^T G written out here (no LAPACK), and
// checks Q^T O = V p5(S/||G||) V^T for the polar factor Q = U V^T. Then one Muon step by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/muon.h"
#include "tensor/elementwise.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;

namespace {

using Matrix = std::vector<std::vector<double>>;

Matrix of(const Tensor& t) {
  const auto v = t.to_vector<double>();
  Matrix m(static_cast<std::size_t>(t.size(0)), std::vector<double>(static_cast<std::size_t>(t.size(1))));
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = 0; j < m[i].size(); ++j) m[i][j] = v[i * m[i].size() + j];
  return m;
}

Matrix times(const Matrix& a, const Matrix& b, bool transpose_a = false) {
  const std::size_t n = transpose_a ? a[0].size() : a.size(), k = transpose_a ? a.size() : a[0].size();
  Matrix c(n, std::vector<double>(b[0].size(), 0.0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < b[0].size(); ++j)
      for (std::size_t l = 0; l < k; ++l) c[i][j] += (transpose_a ? a[l][i] : a[i][l]) * b[l][j];
  return c;
}

// Eigenvalues and eigenvectors (columns of v) of a symmetric matrix, by cyclic Jacobi rotations.
void jacobi(Matrix a, std::vector<double>& values, Matrix& v) {
  const std::size_t n = a.size();
  v.assign(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) v[i][i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t q = p + 1; q < n; ++q) off += a[p][q] * a[p][q];
    if (off < 1e-30) break;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t q = p + 1; q < n; ++q) {
        if (std::abs(a[p][q]) < 1e-300) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (std::size_t k = 0; k < n; ++k) {  // a <- J^T a J
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq, a[k][q] = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk, a[q][k] = s * apk + c * aqk;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq, v[k][q] = s * vkp + c * vkq;
        }
      }
  }
  values.resize(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = a[i][i];
}

Tensor random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Generator gen(seed);
  Tensor g = Tensor::zeros({rows, cols}, DType::Float64);
  kernels::normal_(g, 0.0, 1.0, gen);
  return g;
}

}  // namespace

TEST_CASE("Newton-Schulz: each singular value through the quintic five times, the singular vectors kept") {
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{7, 4}, {4, 7}, {5, 5}}) {
    const Tensor g = random_matrix(rows, cols, 11 + static_cast<std::uint64_t>(rows));
    const Matrix gm = of(g), o = of(newton_schulz(g));
    // Work on the side with the smaller Gram matrix: G^T G (cols x cols) when tall, else G G^T.
    const bool tall = rows >= cols;
    const Matrix a = tall ? gm : [&] {
      Matrix t(gm[0].size(), std::vector<double>(gm.size()));
      for (std::size_t i = 0; i < gm.size(); ++i)
        for (std::size_t j = 0; j < gm[0].size(); ++j) t[j][i] = gm[i][j];
      return t;
    }();
    const Matrix ot = tall ? o : [&] {
      Matrix t(o[0].size(), std::vector<double>(o.size()));
      for (std::size_t i = 0; i < o.size(); ++i)
        for (std::size_t j = 0; j < o[0].size(); ++j) t[j][i] = o[i][j];
      return t;
    }();
    std::vector<double> lambda;
    Matrix v;
    jacobi(times(a, a, true), lambda, v);  // A^T A = V S^2 V^T
    double frob = 0;
    for (double l : lambda) frob += l;
    frob = std::sqrt(frob);
    // Q = U V^T = A V S^-1 V^T; the expected Q^T O = V p5(S / ||A||) V^T.
    const std::size_t n = lambda.size();
    Matrix inv(n, std::vector<double>(n, 0.0)), want(n, std::vector<double>(n, 0.0));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t k = 0; k < n; ++k) {
          double x = std::sqrt(lambda[k]) / (frob + 1e-7);  // newton_schulz's guard against a zero matrix
          for (int step = 0; step < 5; ++step) x = 3.4445 * x - 4.7750 * x * x * x + 2.0315 * x * x * x * x * x;
          inv[i][j] += v[i][k] * v[j][k] / std::sqrt(lambda[k]);
          want[i][j] += v[i][k] * v[j][k] * x;
        }
    const Matrix q = times(a, inv);
    const Matrix got = times(q, ot, true);
    double d = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) d = std::max(d, std::abs(got[i][j] - want[i][j]));
    INFO(rows << " x " << cols << ": largest difference " << d);
    CHECK(d < 1e-9);
  }
  CHECK_THROWS_WITH(newton_schulz(Tensor::zeros({3}, DType::Float64)), Catch::Contains("a 2-D matrix, got shape [3]"));
}

TEST_CASE("Muon: one step is p (1 - lr wd) - lr sqrt(max(1, r/c)) NS(g + mu g), for matrices only") {
  Tensor p = random_matrix(6, 3, 1);
  p.set_requires_grad(true);
  const Tensor p0 = kernels::clone(p.detach());
  const Tensor g = random_matrix(6, 3, 2);
  p.set_grad(kernels::clone(g));
  Muon muon({{{p}, 0.1}}, MuonOptions{0.02, 0.95, true, 5});
  muon.step();
  const auto expected_update = newton_schulz(kernels::add(g, kernels::mul(g, 0.95))).to_vector<double>();
  const auto before = p0.to_vector<double>(), after = p.detach().to_vector<double>();
  double d = 0;
  for (std::size_t i = 0; i < after.size(); ++i)
    d = std::max(d, std::abs(after[i] - (before[i] * (1 - 0.02 * 0.1) - 0.02 * std::sqrt(2.0) * expected_update[i])));
  CHECK(d < 1e-12);
  Tensor bias = Tensor::zeros({3}, DType::Float64);
  CHECK_THROWS_WITH(Muon({{{bias}, 0.0}}), Catch::Contains("a parameter of shape [3] belongs with AdamW"));
}
