// How many threads the CPU math may use. ringgrad's own kernels are single-threaded; the
// count goes to the BLAS, whose thread pool otherwise takes every core (and fights the other
// ranks on the same machine). The examples set it from --threads (default 1).
#pragma once

namespace ringgrad {

/// Sets the BLAS thread count (>= 1); throws std::invalid_argument below 1. At 1, gemm() may
/// run float32 products on oneDNN (tensor/onednn.h), which this call then loads.
void set_num_threads(int n);

/// The count last set, or 0 before any set_num_threads (OpenBLAS then follows its own
/// default: OPENBLAS_NUM_THREADS, else every core; gemm() leaves oneDNN out).
int num_threads();

}  // namespace ringgrad
