// The GEMM entry points the tensor ops call: the CPU GEMM at the process's matmul precision, by
// the library that runs its shape faster, and a batch of GEMMs on either device.
#include <fmt/format.h>

#include <stdexcept>
#include <type_traits>
#include <vector>

#include "tensor/gemm.h"
#include "tensor/onednn.h"
#include "tensor/precision.h"
#include "tensor/threads.h"

#if RINGGRAD_HAVE_CUDA
#include "tensor/cublas.h"
#endif

namespace ringgrad::kernels {
namespace {

void gemm_onednn(const GemmArgs<float>& g) {
  const int status = onednn_sgemm()(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n, g.k, g.alpha, g.a, g.lda,
                                    g.b, g.ldb, g.beta, g.c, g.ldc);
  if (status != 0) {
    throw std::runtime_error(fmt::format("gemm: dnnl_sgemm returned status {} on M {} N {} K {}", status, g.m, g.n, g.k));
  }
}

template <typename T>
void gemm_float(const GemmArgs<T>& g) {
  const CpuGemmLibrary library = cpu_gemm_library(g);
  if constexpr (std::is_same_v<T, float>) {
    if (library == CpuGemmLibrary::kOneDnn) return gemm_onednn(g);
  }
  if (library == CpuGemmLibrary::kOpenBlas) return gemm_blas(g);
  gemm_reference(g);
}

// bf16 inputs, float32 accumulation, emulated: every product of two bf16 numbers (8
// significant bits each) is exact in float32, so the float32 GEMM on rounded copies sums
// exactly the products a bf16 GEMM with float32 accumulation sums.
void gemm_bfloat16_emulated(const GemmArgs<float>& g) {
  std::vector<float> a(static_cast<std::size_t>(span_a(g))), b(static_cast<std::size_t>(span_b(g)));
  round_to_bfloat16(g.a, a.data(), span_a(g));
  round_to_bfloat16(g.b, b.data(), span_b(g));
  GemmArgs<float> rounded = g;
  rounded.a = a.data(), rounded.b = b.data();
  gemm_float(rounded);
}

}  // namespace

template <typename T>
CpuGemmLibrary cpu_gemm_library(const GemmArgs<T>& g) {
  // An empty product only scales C by beta (BLAS's rule for K = 0), which oneDNN's sgemm skips:
  // the reference kernel does it, at no cost worth a library call.
  if (g.m == 0 || g.n == 0 || g.k == 0) return CpuGemmLibrary::kReference;
  if constexpr (std::is_same_v<T, float>) {
    // Sorted by size and transposition, not by caller (tensor/onednn.h says why).
    const double multiply_adds = static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    if (num_threads() == 1 && onednn_sgemm() != nullptr &&
        onednn_runs_faster(onednn_avx512(), g.trans_a, g.trans_b, multiply_adds)) {
      return CpuGemmLibrary::kOneDnn;
    }
  }
  return has_blas() ? CpuGemmLibrary::kOpenBlas : CpuGemmLibrary::kReference;
}

const char* library_name(CpuGemmLibrary library) {
  if (library == CpuGemmLibrary::kOneDnn) return "oneDNN";
  return library == CpuGemmLibrary::kOpenBlas ? "OpenBLAS" : "reference";
}

template <typename T>
void gemm(const GemmArgs<T>& g) {
  if constexpr (std::is_same_v<T, float>) {
    if (matmul_precision() == MatmulPrecision::kBFloat16 && g.m > 0 && g.n > 0 && g.k > 0) {
      return gemm_bfloat16_emulated(g);
    }
  }
  gemm_float(g);
}

template <typename T>
void gemm_batched(Device device, const GemmArgs<T>& g, const GemmBatch& batch) {
  if (device.is_cuda()) {
#if RINGGRAD_HAVE_CUDA
    return cuda::gemm_batched(device.index, g, batch);
#else
    throw std::logic_error("gemm_batched: ringgrad was built without CUDA");
#endif
  }
  GemmArgs<T> entry = g;
  for (std::int64_t i = 0; i < batch.count; ++i) {
    entry.a = g.a + i * batch.stride_a, entry.b = g.b + i * batch.stride_b, entry.c = g.c + i * batch.stride_c;
    gemm(entry);
  }
}

template CpuGemmLibrary cpu_gemm_library(const GemmArgs<float>&);
template CpuGemmLibrary cpu_gemm_library(const GemmArgs<double>&);
template void gemm(const GemmArgs<float>&);
template void gemm(const GemmArgs<double>&);
template void gemm_batched(Device, const GemmArgs<float>&, const GemmBatch&);
template void gemm_batched(Device, const GemmArgs<double>&, const GemmBatch&);

}  // namespace ringgrad::kernels
