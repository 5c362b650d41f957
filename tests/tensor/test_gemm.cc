// The BLAS GEMM against the reference kernel, and matmul's shape handling against loops.
#include <catch2/catch.hpp>

#include <type_traits>

#include "tensor/gemm.h"
#include "tensor/matmul.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
namespace k = ringgrad::kernels;

TEMPLATE_TEST_CASE("BLAS GEMM agrees with the reference kernel in every transpose combination", "", float, double) {
  if (!k::has_blas()) {
    WARN("skipped: built without a CPU BLAS");
    return;
  }
  INFO("OpenBLAS kernels: " << k::blas_core_name());
  Generator gen(7);
  const std::int64_t m = 37, n = 29, kk = 53;
  // Both sum 53 products of numbers below 1 in magnitude, in different orders.
  const double margin = std::is_same_v<TestType, float> ? 1e-5 : 1e-12;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = Tensor::zeros(ta ? Shape{kk, m} : Shape{m, kk}, dtype_of<TestType>());
      Tensor b = Tensor::zeros(tb ? Shape{n, kk} : Shape{kk, n}, dtype_of<TestType>());
      k::uniform_(a, -1, 1, gen);
      k::uniform_(b, -1, 1, gen);
      Tensor c_ref = Tensor::full({m, n}, 0.5, dtype_of<TestType>());
      Tensor c_blas = k::clone(c_ref);
      k::GemmArgs<TestType> g{ta, tb, m, n, kk, TestType(1.5), a.data<TestType>(), a.size(1), b.data<TestType>(),
                              b.size(1), TestType(0.25), c_ref.data<TestType>(), n};
      k::gemm_reference(g);
      g.c = c_blas.data<TestType>();
      k::gemm_blas(g);
      auto r = c_ref.to_vector<double>(), bl = c_blas.to_vector<double>();
      for (std::size_t i = 0; i < r.size(); ++i) REQUIRE(bl[i] == Approx(r[i]).margin(margin));
    }
  }
}

TEST_CASE("batched matmul broadcasts batch dims and reads transposed views") {
  Generator gen(3);
  Tensor a = Tensor::zeros({2, 1, 4, 5}, DType::Float64);
  Tensor b = Tensor::zeros({3, 6, 5}, DType::Float64);  // used transposed: [3, 5, 6]
  k::uniform_(a, -1, 1, gen);
  k::uniform_(b, -1, 1, gen);
  Tensor bt = k::transpose(b, -1, -2);
  Tensor c = k::matmul(a, bt);
  REQUIRE(c.shape() == Shape{2, 3, 4, 6});
  auto av = a.to_vector<double>(), bv = b.to_vector<double>(), cv = c.to_vector<double>();
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 3; ++y)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 6; ++j) {
          double s = 0;
          for (int p = 0; p < 5; ++p) s += av[static_cast<std::size_t>(x * 20 + i * 5 + p)] * bv[static_cast<std::size_t>(y * 30 + j * 5 + p)];
          REQUIRE(cv[static_cast<std::size_t>(((x * 3 + y) * 4 + i) * 6 + j)] == Approx(s).epsilon(1e-12));
        }
}

TEST_CASE("matmul names both shapes when they do not fit") {
  REQUIRE_THROWS_WITH(k::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})),
                      Catch::Contains("matmul") && Catch::Contains("[2, 3]") && Catch::Contains("[4, 5]"));
  REQUIRE(k::matmul(Tensor::zeros({2, 0}), Tensor::zeros({0, 3})).to_vector<float>() == std::vector<float>(6, 0));
}
