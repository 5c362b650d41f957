// RINGGRAD_HOST_DEVICE marks a small function that both g++ (the CPU loops) and nvcc (the CUDA
// kernels) compile, so arithmetic shared by a CPU kernel and its CUDA twin is written once.
#pragma once

#if defined(__CUDACC__)
#define RINGGRAD_HOST_DEVICE __host__ __device__
#else
#define RINGGRAD_HOST_DEVICE
#endif
