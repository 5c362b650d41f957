// Loading oneDNN with dlopen at first use, only where its AVX-512 kernels run, and with OpenMP at
// one thread: OMP_NUM_THREADS=1 for the load, as openblas.cc names OpenBLAS's kernels for its.
#include "tensor/onednn.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace ringgrad::kernels {
namespace {

// dnnl_cpu_isa_t is a set of bits, each ISA holding those of the ones it extends; avx512_core
// (AVX-512 F, CD, BW, DQ, VL) is 0x27, and every later AVX-512 ISA includes it.
constexpr unsigned kAvx512Core = 0x27;

bool wanted() {
  const char* env = std::getenv("RINGGRAD_ONEDNN");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

DnnlSgemm load() {
  if (!wanted() || !__builtin_cpu_supports("avx512f")) return nullptr;  // no AVX-512: not worth the load
  // OpenMP reads its thread count as it loads. The caller's value comes back right after.
  const char* old = std::getenv("OMP_NUM_THREADS");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("OMP_NUM_THREADS", "1", 1);
  void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (saved) {
    setenv("OMP_NUM_THREADS", saved->c_str(), 1);
  } else {
    unsetenv("OMP_NUM_THREADS");
  }
  if (lib == nullptr) return nullptr;
  auto isa = reinterpret_cast<unsigned (*)()>(dlsym(lib, "dnnl_get_effective_cpu_isa"));
  auto sgemm = reinterpret_cast<DnnlSgemm>(dlsym(lib, "dnnl_sgemm"));
  // Found through oneDNN's own dependency, libgomp. More than one thread means OpenMP was already
  // loaded, with its count read from another environment: then OpenBLAS keeps every GEMM.
  auto omp_threads = reinterpret_cast<int (*)()>(dlsym(lib, "omp_get_max_threads"));
  if (isa == nullptr || sgemm == nullptr || omp_threads == nullptr) return nullptr;
  if ((isa() & kAvx512Core) != kAvx512Core || omp_threads() != 1) return nullptr;
  return sgemm;
}

}  // namespace

DnnlSgemm onednn_sgemm() {
  static const DnnlSgemm sgemm = load();
  return sgemm;
}

}  // namespace ringgrad::kernels
