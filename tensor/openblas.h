// OpenBLAS, loaded by hand at first use.
//
// OpenBLAS picks its kernels once, as it loads, from the CPU's model number. Version 0.3.21
// (Debian 12) does not know Sapphire Rapids and later Xeons and falls back to its SSE3
// "Prescott" kernels: about 37 GFLOP/s single-threaded SGEMM here, against 175 for its own
// AVX-512 "SkylakeX" kernels on the same CPU. Loading the library ourselves lets us name the
// kernel family first (OPENBLAS_CORETYPE) when the CPU has AVX-512 and the user chose none.
#pragma once

#include <cblas.h>

namespace ringgrad::kernels {

struct OpenBlas {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
  decltype(&openblas_set_num_threads) set_num_threads;
  decltype(&openblas_get_corename) get_corename;
};

/// The library's entry points, or null when it cannot be loaded (GEMM then falls back to the
/// reference kernel). Loaded once per process, thread-safely.
const OpenBlas* openblas();

}  // namespace ringgrad::kernels
