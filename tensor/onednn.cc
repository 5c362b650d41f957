// Loading oneDNN with dlopen, only where its AVX-512 kernels run, with OpenMP held at one thread:
// OMP_NUM_THREADS=1 for the load, the way openblas.cc names OpenBLAS's kernels for its load.
#include "tensor/onednn.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace ringgrad::kernels {
namespace {

// dnnl_cpu_isa_t is a set of bits, each ISA holding those of the ones it extends; avx512_core
// (AVX-512 F, BW, DQ and VL) is 0x27, and every later AVX-512 ISA includes it.
constexpr unsigned kAvx512Core = 0x27;

// OpenMP reads its thread count as it loads: 1 for the load, then the caller's value back.
void* open_with_one_openmp_thread() {
  const char* old = std::getenv("OMP_NUM_THREADS");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("OMP_NUM_THREADS", "1", 1);
  void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (saved) {
    setenv("OMP_NUM_THREADS", saved->c_str(), 1);
  } else {
    unsetenv("OMP_NUM_THREADS");
  }
  return lib;
}

DnnlSgemm load() {
  const char* env = std::getenv("RINGGRAD_ONEDNN");
  if ((env != nullptr && std::strcmp(env, "0") == 0) || !__builtin_cpu_supports("avx512f")) return nullptr;
  void* lib = open_with_one_openmp_thread();
  if (lib == nullptr) return nullptr;
  auto isa = reinterpret_cast<unsigned (*)()>(dlsym(lib, "dnnl_get_effective_cpu_isa"));
  auto sgemm = reinterpret_cast<DnnlSgemm>(dlsym(lib, "dnnl_sgemm"));
  // Found through oneDNN's own dependency, libgomp. More than one thread means OpenMP was loaded
  // before, with its count read from another environment.
  auto omp_threads = reinterpret_cast<int (*)()>(dlsym(lib, "omp_get_max_threads"));
  if (isa && sgemm && omp_threads && (isa() & kAvx512Core) == kAvx512Core && omp_threads() == 1) return sgemm;
  dlclose(lib);
  return nullptr;
}

}  // namespace

DnnlSgemm onednn_sgemm() {
  static const DnnlSgemm sgemm = load();
  return sgemm;
}

}  // namespace ringgrad::kernels
