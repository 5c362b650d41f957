// What every GPU test shares: the skip when no GPU is visible, random inputs made on the CPU,
// and the comparison of an op on GPU copies with the same op on the CPU (its twin), forward
// and gradients, within a stated tolerance.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::testing {

/// True when a GPU is visible. Otherwise prints "skipped: <cuda::unavailable_reason()>" (once
/// per process) and returns false; the test case then ends without assertions, which Catch2
/// counts as passed (also under "-w NoTests", which only fails when no case runs at all).
bool gpu_available();

/// Ends the current test case (passed) on a machine without a GPU.
#define RINGGRAD_REQUIRE_GPU() \
  if (!::ringgrad::testing::gpu_available()) return

/// The GPU the tests run on: cuda:0.
Device gpu();

/// A copy of the CPU tensor `t` on gpu() (no autograd history).
Tensor to_gpu(const Tensor& t);

/// |gpu - cpu| <= atol + rtol * |cpu|, element by element.
struct Tolerance {
  double atol, rtol;
};
/// float32 kernels: the GPU differs from the CPU in summation order and in the fused
/// multiply-adds nvcc emits, a few float32 ulps (2^-24 relative) grown by sums of ~100 terms.
inline constexpr Tolerance kFloat32{1e-5, 1e-4};
/// bf16 matmul precision: operands are rounded to 8 significant bits (2^-9 relative) on both
/// sides, products accumulated in float32. Equal rounding gives float32-close results, but a
/// value computed a little differently may round to the neighbouring bf16 number, so one bf16
/// step (2^-8 relative) is allowed, with margin.
inline constexpr Tolerance kBFloat16{1e-2, 1e-2};

/// A CPU tensor of `shape` with elements uniform in [low, high), from Generator(seed).
Tensor random_tensor(const Shape& shape, std::uint64_t seed, DType dtype = DType::Float32, double low = -1.0,
                     double high = 1.0);
/// As random_tensor, marked as requiring grad (an input whose gradient is compared).
Tensor random_param(const Shape& shape, std::uint64_t seed, DType dtype = DType::Float32);
/// A CPU int64 tensor of `shape` with elements uniform in [0, n), from Generator(seed).
Tensor random_indices(const Shape& shape, std::int64_t n, std::uint64_t seed);

/// "" when `gpu` and the reference `cpu` (each on any device) have the same shape and agree
/// within `tol` everywhere; else a message naming the shapes, or the worst element, both values
/// and the tolerance.
std::string compare(const Tensor& gpu, const Tensor& cpu, Tolerance tol);

/// Runs `f` on `inputs` (CPU tensors) and on GPU copies of them, then backward on both with
/// the same random upstream gradient, and compares the outputs and every input's gradient
/// (inputs that require grad). Returns "" or the first mismatch, naming what differed.
std::string compare_with_cpu(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                             const std::vector<Tensor>& inputs, Tolerance tol);

}  // namespace ringgrad::testing
