// Loading oneDNN with dlopen, where its kernels are AVX2 or AVX-512 ones, with OpenMP held at one
// thread and binding none (its variables set for the load, the way openblas.cc names OpenBLAS's
// kernels for its load), and the products it runs faster than OpenBLAS.
#include "tensor/onednn.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <optional>
#include <string>

#include "tensor/env_switch.h"

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

// libgomp reads its settings once, as it loads: a thread count, and where to bind threads. For the
// load, one thread and no binding; then the caller's values back. OMP_PROC_BIND, OMP_PLACES or
// GOMP_CPU_AFFINITY would otherwise pin the loading thread, and every thread it starts later, to
// one CPU: two ranks on two cores would then share the first.
void* open_with_one_unbound_openmp_thread() {
  constexpr std::array<const char*, 4> kNames = {"OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"};
  std::array<std::optional<std::string>, kNames.size()> saved;
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (const char* value = std::getenv(kNames[i])) saved[i] = value;
    unsetenv(kNames[i]);
  }
  setenv("OMP_NUM_THREADS", "1", 1);
  void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (saved[i]) {
      setenv(kNames[i], saved[i]->c_str(), 1);
    } else {
      unsetenv(kNames[i]);
    }
  }
  return lib;
}

// RINGGRAD_ONEDNN: unset or "1" lets gemm() use oneDNN, "0" keeps every product on OpenBLAS.
bool onednn_allowed() {
  return env_switch("RINGGRAD_ONEDNN", "OpenBLAS runs every product",
                    "the default: oneDNN runs the products it runs faster");
}

Loaded load() {
  if (!onednn_allowed() || !__builtin_cpu_supports("avx2")) return {};
  void* lib = open_with_one_unbound_openmp_thread();
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
