// Loading oneDNN with dlopen, where its kernels are AVX2 or AVX-512 ones, with OpenMP held at one
// thread (OMP_NUM_THREADS=1 for the load, the way openblas.cc names OpenBLAS's kernels for its
// load), and the products it runs faster than OpenBLAS.
#include "tensor/onednn.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace ringgrad::kernels {
namespace {

// dnnl_cpu_isa_t is a set of bits, each ISA holding those of the ones it extends: avx2 is 0x7,
// avx512_core (AVX-512 F, BW, DQ and VL) 0x27, and every later ISA includes one of them.
constexpr unsigned kAvx2 = 0x7;
constexpr unsigned kAvx512Core = 0x27;

struct Loaded {
  DnnlSgemm sgemm = nullptr;
  bool avx512 = false;
};

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

Loaded load() {
  const char* env = std::getenv("RINGGRAD_ONEDNN");
  if ((env != nullptr && std::strcmp(env, "0") == 0) || !__builtin_cpu_supports("avx2")) return {};
  void* lib = open_with_one_openmp_thread();
  if (lib == nullptr) return {};
  auto isa = reinterpret_cast<unsigned (*)()>(dlsym(lib, "dnnl_get_effective_cpu_isa"));
  auto sgemm = reinterpret_cast<DnnlSgemm>(dlsym(lib, "dnnl_sgemm"));
  // Found through oneDNN's own dependency, libgomp. More than one thread means OpenMP was loaded
  // before, with its count read from another environment.
  auto omp_threads = reinterpret_cast<int (*)()>(dlsym(lib, "omp_get_max_threads"));
  if (isa && sgemm && omp_threads && (isa() & kAvx2) == kAvx2 && omp_threads() == 1) {
    return {sgemm, (isa() & kAvx512Core) == kAvx512Core};
  }
  dlclose(lib);
  return {};
}

const Loaded& loaded() {
  static const Loaded library = load();
  return library;
}

}  // namespace

DnnlSgemm onednn_sgemm() { return loaded().sgemm; }

bool onednn_avx512() { return loaded().avx512; }

bool onednn_runs_faster(bool avx512, bool trans_a, bool trans_b, double multiply_adds) {
  const bool large = multiply_adds > kOneDnnMinMultiplyAdds;
  if (avx512) return large;                  // the Linears; attention's per-head products stay with OpenBLAS
  return !large || (!trans_a && !trans_b);  // attention's products and every Linear's dx
}

}  // namespace ringgrad::kernels
