// Loading OpenBLAS with dlopen at first use: on a CPU with the AVX-512 sets the SkylakeX kernels
// need, OPENBLAS_CORETYPE=SkylakeX is set for the load unless the user chose a core.
#include "tensor/openblas.h"

#include <dlfcn.h>

#include <cstdlib>

namespace ringgrad::kernels {
namespace {

// The instruction sets OpenBLAS's SkylakeX kernels use.
bool cpu_runs_skylakex_kernels() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

const OpenBlas* load() {
  // Name the kernels only for the load, and only when nobody else did.
  const bool choose = std::getenv("OPENBLAS_CORETYPE") == nullptr && cpu_runs_skylakex_kernels();
  if (choose) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  void* lib = dlopen(RINGGRAD_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (choose) unsetenv("OPENBLAS_CORETYPE");
  if (lib == nullptr) return nullptr;
  static OpenBlas blas{
      reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm")),
      reinterpret_cast<decltype(&cblas_dgemm)>(dlsym(lib, "cblas_dgemm")),
      reinterpret_cast<decltype(&openblas_set_num_threads)>(dlsym(lib, "openblas_set_num_threads")),
      reinterpret_cast<decltype(&openblas_get_corename)>(dlsym(lib, "openblas_get_corename")),
  };
  if (!blas.sgemm || !blas.dgemm || !blas.set_num_threads || !blas.get_corename) return nullptr;
  return &blas;
}

}  // namespace

const OpenBlas* openblas() {
  static const OpenBlas* blas = load();
  return blas;
}

}  // namespace ringgrad::kernels
