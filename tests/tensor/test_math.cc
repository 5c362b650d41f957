// Element-wise math, broadcasting, reductions, softmax and indexing against values computed
// by hand or by a plain loop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "tensor/elementwise.h"
#include "tensor/index.h"
#include "tensor/print.h"
#include "tensor/random.h"
#include "tensor/reduce.h"
#include "tensor/softmax.h"
#include "tensor/view.h"

using namespace ringgrad;
namespace k = ringgrad::kernels;

TEST_CASE("broadcasting add follows NumPy's rules") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector<float>({10, 20}, {2, 1});
  REQUIRE(k::add(a, b).to_vector<float>() == std::vector<float>{11, 12, 13, 24, 25, 26});
  Tensor c = Tensor::from_vector<float>({1, 2, 3}, {3});
  REQUIRE(k::mul(a, c).to_vector<float>() == std::vector<float>{1, 4, 9, 4, 10, 18});
  REQUIRE(k::add(b, c).shape() == Shape{2, 3});
}

TEST_CASE("mismatched shapes name the op and both shapes") {
  Tensor a = Tensor::zeros({2, 3});
  Tensor b = Tensor::zeros({4});
  REQUIRE_THROWS_WITH(k::add(a, b), Catch::Contains("add") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  REQUIRE_THROWS_WITH(k::mul(a, Tensor::zeros({2, 3}, DType::Float64)), Catch::Contains("dtype mismatch"));
}

TEST_CASE("element-wise functions match <cmath>") {
  std::vector<double> xs{-2.0, -0.5, 0.0, 0.3, 1.7};
  Tensor x = Tensor::from_vector<double>(xs, {5});
  auto tanh_v = k::tanh(x).to_vector<double>();
  auto sig_v = k::sigmoid(x).to_vector<double>();
  auto relu_v = k::relu(x).to_vector<double>();
  auto gelu_v = k::gelu(x).to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    CHECK(tanh_v[i] == Approx(std::tanh(v)));
    CHECK(sig_v[i] == Approx(1 / (1 + std::exp(-v))));
    CHECK(relu_v[i] == (v > 0 ? v : 0));
    CHECK(gelu_v[i] == Approx(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))));
  }
  // GELU(1) from the tanh approximation, a published constant: 0.841192.
  CHECK(k::gelu(Tensor::scalar(1.0, DType::Float64)).item<double>() == Approx(0.841192).epsilon(1e-6));
}

TEST_CASE("sum, mean and max over dims with keepdim") {
  Tensor a = Tensor::from_vector<double>({1, 5, 3, 4, 2, 6}, {2, 3});
  REQUIRE(k::sum(a).item<double>() == 21);
  REQUIRE(k::sum(a, {0}).to_vector<double>() == std::vector<double>{5, 7, 9});
  REQUIRE(k::sum(a, {1}, true).shape() == Shape{2, 1});
  REQUIRE(k::mean(a, {-1}).to_vector<double>() == std::vector<double>{3, 4});
  auto [values, indices] = k::max(a, 1);
  REQUIRE(values.to_vector<double>() == std::vector<double>{5, 6});
  REQUIRE(indices.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2});
  // Over the first dim of a 3-d tensor the output keeps the other dims in order.
  Tensor b = k::reshape(Tensor::arange(24, DType::Float64), {2, 3, 4});
  REQUIRE(k::argmax(b, 0).to_vector<std::int64_t>() == std::vector<std::int64_t>(12, 1));
  REQUIRE(k::max(b, 0).first.to_vector<double>()[5] == 17);
}

TEST_CASE("sum_to reverses broadcasting") {
  Tensor g = Tensor::ones({2, 3, 4}, DType::Float64);
  REQUIRE(k::sum_to(g, {4}).to_vector<double>() == std::vector<double>(4, 6));
  REQUIRE(k::sum_to(g, {3, 1}).to_vector<double>() == std::vector<double>(3, 8));
  REQUIRE(k::sum_to(g, {1, 1, 1}).item<double>() == 24);
}

TEST_CASE("softmax is stable for large logits and rows sum to one") {
  Tensor x = Tensor::from_vector<float>({1000, 1001, 1002, -5, 0, 5}, {2, 3});
  Tensor s = k::softmax(x, -1);
  std::vector<float> v = s.to_vector<float>();
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  CHECK(v[0] == Approx(1 / z));
  CHECK(v[2] == Approx(std::exp(2.0) / z));
  CHECK(v[3] + v[4] + v[5] == Approx(1.0));
  Tensor ls = k::log_softmax(x, -1);
  CHECK(ls.to_vector<float>()[0] == Approx(-std::log(z)));
  // Along dim 0: each column is normalised instead.
  Tensor c = k::softmax(Tensor::from_vector<double>({0, 1, std::log(3.0), 1}, {2, 2}), 0);
  CHECK(c.to_vector<double>()[0] == Approx(0.25));
  CHECK(c.to_vector<double>()[1] == Approx(0.5));
}

TEST_CASE("index_select, gather and their scatter-add inverses") {
  Tensor table = Tensor::from_vector<float>({0, 1, 10, 11, 20, 21}, {3, 2});
  Tensor idx = Tensor::from_vector<std::int64_t>({2, 0, 2}, {3});
  REQUIRE(k::index_select(table, idx).to_vector<float>() == std::vector<float>{20, 21, 0, 1, 20, 21});
  Tensor acc = Tensor::zeros({3, 2});
  k::index_add_(acc, idx, Tensor::ones({3, 2}));
  REQUIRE(acc.to_vector<float>() == std::vector<float>{1, 1, 0, 0, 2, 2});
  REQUIRE_THROWS_WITH(k::index_select(table, Tensor::from_vector<std::int64_t>({3}, {1})),
                      Catch::Contains("index 3 is out of range for size 3"));

  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor pick = Tensor::from_vector<std::int64_t>({2, 0}, {2, 1});
  REQUIRE(k::gather(x, 1, pick).to_vector<float>() == std::vector<float>{3, 4});
  Tensor back = Tensor::zeros({2, 3});
  k::scatter_add_(back, 1, pick, Tensor::ones({2, 1}));
  REQUIRE(back.to_vector<float>() == std::vector<float>{0, 0, 1, 1, 0, 0});
}

TEST_CASE("random streams depend only on the seed") {
  Tensor a = Tensor::zeros({1000});
  Tensor b = Tensor::zeros({1000});
  Generator g1(42), g2(42), g3(43);
  k::normal_(a, 0.0, 1.0, g1);
  k::normal_(b, 0.0, 1.0, g2);
  REQUIRE(a.to_vector<float>() == b.to_vector<float>());
  k::normal_(b, 0.0, 1.0, g3);
  REQUIRE(a.to_vector<float>() != b.to_vector<float>());
  // Moments of 1000 standard normals: mean within 4 standard errors of 0, variance near 1.
  const double mean = k::mean(a).item<double>();
  CHECK(std::abs(mean) < 4 / std::sqrt(1000.0));
  CHECK(k::mean(k::mul(a, a)).item<double>() == Approx(1.0).epsilon(0.15));
  std::vector<std::int64_t> p = randperm(10, g1);
  std::sort(p.begin(), p.end());
  REQUIRE(p == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("printing looks like PyTorch") {
  Tensor a = Tensor::from_vector<float>({1, -2.5, 3, 4}, {2, 2});
  REQUIRE(to_string(a) == "tensor([[ 1.0000, -2.5000],\n        [ 3.0000,  4.0000]])");
  REQUIRE(to_string(Tensor::arange(3)) == "tensor([0, 1, 2], dtype=int64)");
  REQUIRE(fmt::format("{}", Tensor::scalar(2.0, DType::Float64)) == "tensor(2.0000, dtype=float64)");
}
