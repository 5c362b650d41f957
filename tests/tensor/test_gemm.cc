// The BLAS GEMM and oneDNN's against the reference kernel, gemm()'s choice between them, and
// matmul's shape handling against loops.
#include <catch2/catch.hpp>
#include <sched.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/gemm.h"
#include "tensor/matmul.h"
#include "tensor/onednn.h"
#include "tensor/random.h"
#include "tensor/threads.h"
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

TEST_CASE("gemm() hands oneDNN no empty product: with K = 0, C becomes beta C") {
  set_num_threads(1);  // where oneDNN loads, it would otherwise be asked
  std::vector<float> a(16, 1.0f), b(16, 1.0f);
  for (const float beta : {0.0f, 0.5f}) {
    INFO("beta " << beta);
    std::vector<float> c(16, beta == 0 ? std::nanf("") : 2.0f);  // beta = 0 must not read C
    const k::GemmArgs<float> g{false, false, 4, 4, 0, 1.0f, a.data(), 1, b.data(), 4, beta, c.data(), 4};
    REQUIRE(k::cpu_gemm_library(g) == k::CpuGemmLibrary::kReference);
    k::gemm(g);
    REQUIRE(c == std::vector<float>(16, beta * 2.0f));
  }
  std::vector<float> c(16, 3.0f);  // M = 0: nothing to write
  k::gemm(k::GemmArgs<float>{false, false, 0, 4, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f, c.data(), 4});
  REQUIRE(c == std::vector<float>(16, 3.0f));
}

TEST_CASE("loading oneDNN pins no thread, whatever OMP_PROC_BIND says") {
  cpu_set_t before, after;
  REQUIRE(sched_getaffinity(0, sizeof before, &before) == 0);
  if (CPU_COUNT(&before) < 2) {
    WARN("skipped: this process may run on one CPU only, so a pinned thread looks like any other");
    return;
  }
  // libgomp, which oneDNN loads, would bind the loading thread to the first place.
  setenv("OMP_PROC_BIND", "true", 1);
  setenv("OMP_PLACES", "cores", 1);
  set_num_threads(1);  // loads oneDNN where it is there (ctest runs each case in a process of its own)
  REQUIRE(sched_getaffinity(0, sizeof after, &after) == 0);
  REQUIRE(CPU_EQUAL(&before, &after));
  REQUIRE(std::string(std::getenv("OMP_PROC_BIND")) == "true");  // the caller's settings, back
  REQUIRE(std::string(std::getenv("OMP_PLACES")) == "cores");
}

TEST_CASE("matmul names both shapes when they do not fit") {
  REQUIRE_THROWS_WITH(k::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})),
                      Catch::Contains("matmul") && Catch::Contains("[2, 3]") && Catch::Contains("[4, 5]"));
  REQUIRE(k::matmul(Tensor::zeros({2, 0}), Tensor::zeros({0, 3})).to_vector<float>() == std::vector<float>(6, 0));
}

TEST_CASE("gemm() hands oneDNN the float32 products its kernels run faster on one thread and they agree with the reference kernel") {
  if (k::onednn_sgemm() == nullptr || !k::has_blas()) {
    WARN("skipped: oneDNN's sgemm is not in use here (no libdnnl2 or no AVX2, DNNL_MAX_CPU_ISA below AVX2, "
         "RINGGRAD_ONEDNN=0, or OpenMP loaded before at more threads), or no OpenBLAS to compare with");
    return;
  }
  const bool avx512 = k::onednn_avx512();
  INFO("oneDNN's kernels: " << (avx512 ? "AVX-512" : "AVX2"));
  Generator gen(11);
  bool bits_tell_them_apart = false;
  // A product above the 2^20 threshold (1.4 million multiply-adds) and attention's per-head S = Q K^T
  // at T = 64 below it (2^17).
  for (const auto [m, n, kk] : {std::array<std::int64_t, 3>{130, 97, 111}, std::array<std::int64_t, 3>{64, 64, 32}}) {
    const bool large = m * n * kk > (1 << 20);
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (float beta : {0.25f, 0.0f}) {
          INFO("M " << m << " N " << n << " K " << kk << " trans_a " << ta << " trans_b " << tb << " beta " << beta);
          // Row strides 3 past the width: the libraries must read strided operands.
          const std::int64_t lda = (ta ? m : kk) + 3, ldb = (tb ? kk : n) + 3, ldc = n + 3;
          Tensor a = Tensor::zeros({ta ? kk : m, lda}), b = Tensor::zeros({tb ? n : kk, ldb});
          k::uniform_(a, -1, 1, gen);
          k::uniform_(b, -1, 1, gen);
          // beta = 0 must not read C: start it at NaN there.
          const Tensor c0 = Tensor::full({m, ldc}, beta == 0 ? std::nanf("") : 0.5f, DType::Float32);
          Tensor c = k::clone(c0);
          const k::GemmArgs<float> g{ta, tb, m, n, kk, 1.5f, a.data<float>(), lda, b.data<float>(), ldb, beta,
                                     c.data<float>(), ldc};
          auto run = [&](auto&& how) {  // C's m x n block, after `how` wrote it
            k::copy_(c, c0);
            how(g);
            return k::contiguous(k::narrow(c, 1, 0, n)).to_vector<float>();
          };
          const auto reference = run([](const auto& args) { k::gemm_reference(args); });
          // More than one thread: OpenBLAS keeps every product (and may split it another way
          // than on one thread, so its bits are compared at the same count).
          set_num_threads(2);
          REQUIRE(k::cpu_gemm_library(g) == k::CpuGemmLibrary::kOpenBlas);
          const auto openblas_threads = run([](const auto& args) { k::gemm_blas(args); });
          REQUIRE(run([](const auto& args) { k::gemm(args); }) == openblas_threads);
          set_num_threads(1);  // (ctest runs each case in a process of its own)
          const auto openblas = run([](const auto& args) { k::gemm_blas(args); });
          const auto onednn = run([](const auto& args) {
            REQUIRE(k::onednn_sgemm()(args.trans_a ? 'T' : 'N', args.trans_b ? 'T' : 'N', args.m, args.n, args.k,
                                      args.alpha, args.a, args.lda, args.b, args.ldb, args.beta, args.c, args.ldc) == 0);
          });
          // What was measured (tensor/onednn.h): AVX-512 kernels for the large products, AVX2 ones
          // for the small products and the NN ones.
          const bool to_onednn = avx512 ? large : !large || (!ta && !tb);
          REQUIRE(k::cpu_gemm_library(g) == (to_onednn ? k::CpuGemmLibrary::kOneDnn : k::CpuGemmLibrary::kOpenBlas));
          const auto chosen = run([](const auto& args) { k::gemm(args); });
          // Where the two libraries round differently, the bits show which one gemm() called.
          REQUIRE(chosen == (to_onednn ? onednn : openblas));
          bits_tell_them_apart = bits_tell_them_apart || onednn != openblas;
          // At most 111 products of numbers below 1.5 in magnitude, summed in different orders.
          for (std::size_t i = 0; i < chosen.size(); ++i) REQUIRE(chosen[i] == Approx(reference[i]).margin(1e-4));
        }
      }
    }
  }
  REQUIRE(bits_tell_them_apart);
  // float64 has no oneDNN GEMM.
  Tensor q64 = Tensor::zeros({130, 111}, DType::Float64), k64 = Tensor::zeros({97, 111}, DType::Float64),
         s64 = Tensor::zeros({130, 97}, DType::Float64);
  const k::GemmArgs<double> g64{false, true, 130, 97, 111, 1.0, q64.data<double>(), 111, k64.data<double>(), 111, 0.0,
                                s64.data<double>(), 97};
  REQUIRE(k::cpu_gemm_library(g64) == k::CpuGemmLibrary::kOpenBlas);
}
