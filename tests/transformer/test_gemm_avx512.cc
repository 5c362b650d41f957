// The AVX-512 SGEMM against the reference kernel: every transpose combination, tiles cut at
// every edge, depth spanning several packed blocks, alpha and beta, strided (ld > cols) operands.
#include <catch2/catch.hpp>

#include <cmath>

#include "tensor/gemm.h"
#include "tensor/random.h"

using namespace ringgrad;
namespace k = ringgrad::kernels;

TEST_CASE("gemm_avx512 agrees with gemm_reference") {
  if (!k::has_avx512()) {
    WARN("skipped: this CPU has no AVX-512");
    return;
  }
  Generator gen(11);
  struct Case { std::int64_t m, n, kk; float alpha, beta; };
  for (const Case& s : {Case{1, 1, 1, 1, 0}, Case{37, 29, 53, 1.5f, 0.25f}, Case{12, 32, 256, 1, 0},
                        Case{97, 65, 600, 0.5f, 1}, Case{64, 64, 0, 1, 0.5f}, Case{130, 2100, 7, 1, 0}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        INFO("m " << s.m << " n " << s.n << " k " << s.kk << " trans_a " << ta << " trans_b " << tb);
        const std::int64_t pad = 3;  // leading dimensions larger than the matrices
        const std::int64_t lda = (ta ? s.m : s.kk) + pad, ldb = (tb ? s.kk : s.n) + pad, ldc = s.n + pad;
        Tensor a = Tensor::zeros({(ta ? s.kk : s.m) * lda + 1}), b = Tensor::zeros({(tb ? s.n : s.kk) * ldb + 1});
        Tensor c = Tensor::zeros({s.m * ldc});
        k::uniform_(a, -1, 1, gen);
        k::uniform_(b, -1, 1, gen);
        k::uniform_(c, -1, 1, gen);
        std::vector<float> expected = c.to_vector<float>(), got = expected;
        k::GemmArgs<float> g{ta, tb, s.m, s.n, s.kk, s.alpha, a.data<float>(), lda, b.data<float>(), ldb,
                             s.beta, expected.data(), ldc};
        k::gemm_reference(g);
        g.c = got.data();
        k::gemm_avx512(g);
        double worst = 0;
        for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - expected[i]));
        CHECK(worst < 1e-4 * std::sqrt(static_cast<double>(s.kk) + 1));
      }
    }
  }
}
