// A packed AVX-512 SGEMM in the GotoBLAS/BLIS layout (Goto & van de Geijn 2008). B is packed
// into KC x 32 column panels (one stays in L1), A into 8-row panels of an MC x KC block (in
// L2), and an 8 x 32 micro-kernel holds its tile of C in 16 zmm registers: per step of k, two
// vector loads of B and 8 broadcasts of A feed 16 fused multiply-adds (512 flops), enough
// independent chains to keep both FMA units busy. 8 rows divide T = 64 and B T = 768.
//
// Why ringgrad carries one: OpenBLAS 0.3.21 (Debian 12) does not recognise Sapphire Rapids
// and later Xeons and falls back to its SSE3 "Prescott" kernels, a quarter of the speed the
// CPU has. gemm() picks this kernel only in that case (see prefer_gemm_avx512).
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tensor/gemm.h"

namespace ringgrad::kernels {
namespace {

constexpr std::int64_t MR = 8, NR = 32;    // micro-tile of C
constexpr std::int64_t KC = 256, MC = 96;  // depth of a packed block, rows of a packed A block
constexpr std::int64_t NC = 2048;          // columns of a packed B block

// out[(panel * kc + p) * NR + j] = op(B)(pc + p, jc + panel * NR + j), zero past column n.
void pack_b(const GemmArgs<float>& g, std::int64_t pc, std::int64_t kc, std::int64_t jc, std::int64_t nc, float* out) {
  for (std::int64_t jp = 0; jp < nc; jp += NR) {
    float* panel = out + jp * kc;
    const std::int64_t cols = std::min(NR, nc - jp);
    if (cols < NR) std::fill(panel, panel + kc * NR, 0.0f);
    // Loops ordered so that the reads are contiguous.
    if (g.trans_b) {  // B stored [N, K]: a column of op(B) is a row in memory
      for (std::int64_t j = 0; j < cols; ++j) {
        const float* src = g.b + (jc + jp + j) * g.ldb + pc;
        for (std::int64_t p = 0; p < kc; ++p) panel[p * NR + j] = src[p];
      }
    } else {
      for (std::int64_t p = 0; p < kc; ++p) {
        const float* src = g.b + (pc + p) * g.ldb + jc + jp;
        for (std::int64_t j = 0; j < cols; ++j) panel[p * NR + j] = src[j];  // a loop, not a memmove call per row
      }
    }
  }
}

// out[(panel * kc + p) * MR + i] = op(A)(ic + panel * MR + i, pc + p), zero past row m.
void pack_a(const GemmArgs<float>& g, std::int64_t ic, std::int64_t mc, std::int64_t pc, std::int64_t kc, float* out) {
  for (std::int64_t ip = 0; ip < mc; ip += MR) {
    float* panel = out + ip * kc;
    const std::int64_t rows = std::min(MR, mc - ip);
    if (rows < MR) std::fill(panel, panel + kc * MR, 0.0f);
    if (g.trans_a) {  // A stored [K, M]: a column of op(A) is a row in memory
      for (std::int64_t p = 0; p < kc; ++p) {
        const float* src = g.a + (pc + p) * g.lda + ic + ip;
        for (std::int64_t i = 0; i < rows; ++i) panel[p * MR + i] = src[i];
      }
    } else {
      for (std::int64_t i = 0; i < rows; ++i) {
        const float* src = g.a + (ic + ip + i) * g.lda + pc;
        for (std::int64_t p = 0; p < kc; ++p) panel[p * MR + i] = src[p];
      }
    }
  }
}

// C[0:MR, 0:NR] = alpha * (A panel . B panel) + beta * C, C with row stride ldc.
__attribute__((target("avx512f,fma"))) void micro_kernel(std::int64_t kc, const float* a, const float* b, float* c,
                                                         std::int64_t ldc, float alpha, float beta) {
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b + p * NR), b1 = _mm512_loadu_ps(b + p * NR + 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[p * MR + i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    for (int h = 0; h < 2; ++h) {
      float* dst = c + i * ldc + h * 16;
      const __m512 r = _mm512_mul_ps(va, acc[i][h]);
      _mm512_storeu_ps(dst, beta == 0.0f ? r : _mm512_fmadd_ps(vb, _mm512_loadu_ps(dst), r));
    }
  }
}

// A 64-byte-aligned scratch buffer per thread, grown on demand and reused across calls.
float* scratch(std::vector<float>& buf, std::size_t n) {
  if (buf.size() < n + 16) buf.resize(n + 16);
  const auto addr = reinterpret_cast<std::uintptr_t>(buf.data());
  return buf.data() + ((64 - addr % 64) % 64) / sizeof(float);
}

}  // namespace

bool prefer_gemm_avx512() {
  static const bool prefer = [] {
    if (const char* choice = std::getenv("RINGGRAD_GEMM")) return std::string(choice) == "avx512" && has_avx512();
    const std::string core = blas_core_name();
    const bool blas_has_avx512 = core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
    return has_avx512() && !blas_has_avx512;
  }();
  return prefer;
}

bool has_avx512() { return __builtin_cpu_supports("avx512f"); }

void gemm_avx512(const GemmArgs<float>& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // C = beta C
    for (std::int64_t i = 0; i < g.m; ++i) {
      for (std::int64_t j = 0; j < g.n; ++j) g.c[i * g.ldc + j] = g.beta == 0.0f ? 0.0f : g.beta * g.c[i * g.ldc + j];
    }
    return;
  }
  thread_local std::vector<float> a_buf, b_buf;
  float* packed_b = scratch(b_buf, static_cast<std::size_t>(KC * ((NC + NR - 1) / NR * NR)));
  float* packed_a = scratch(a_buf, static_cast<std::size_t>(MC * KC));
  alignas(64) float edge[MR * NR];
  for (std::int64_t jc = 0; jc < g.n; jc += NC) {
    const std::int64_t nc = std::min(NC, g.n - jc);
    for (std::int64_t pc = 0; pc < g.k; pc += KC) {
      const std::int64_t kc = std::min(KC, g.k - pc);
      const float beta = pc == 0 ? g.beta : 1.0f;  // later depth blocks accumulate
      pack_b(g, pc, kc, jc, nc, packed_b);
      for (std::int64_t ic = 0; ic < g.m; ic += MC) {
        const std::int64_t mc = std::min(MC, g.m - ic);
        pack_a(g, ic, mc, pc, kc, packed_a);
        for (std::int64_t jr = 0; jr < nc; jr += NR) {
          for (std::int64_t ir = 0; ir < mc; ir += MR) {
            const float* ap = packed_a + ir * kc;
            const float* bp = packed_b + jr * kc;
            float* c = g.c + (ic + ir) * g.ldc + jc + jr;
            const std::int64_t rows = std::min(MR, mc - ir), cols = std::min(NR, nc - jr);
            if (rows == MR && cols == NR) {
              micro_kernel(kc, ap, bp, c, g.ldc, g.alpha, beta);
              continue;
            }
            // A tile at the edge of C: compute it whole, write back the part inside C.
            micro_kernel(kc, ap, bp, edge, NR, g.alpha, 0.0f);
            for (std::int64_t i = 0; i < rows; ++i) {
              for (std::int64_t j = 0; j < cols; ++j) {
                float& dst = c[i * g.ldc + j];
                dst = beta == 0.0f ? edge[i * NR + j] : edge[i * NR + j] + beta * dst;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace ringgrad::kernels
