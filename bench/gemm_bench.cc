// gemm_bench: GEMM throughput. On the CPU, the reference kernel beside gemm(), which runs each
// shape on OpenBLAS or oneDNN (named per row: tensor/onednn.h), in GFLOP/s;
// on a GPU, cuBLAS (TFLOP/s and the fraction of the card's dense peak). --dtype picks the matmul
// precision: fp32, or bf16 inputs with float32 accumulation (on the CPU an emulation that
// rounds copies of the operands: no faster). FLOPs counted as 2 M N K.
//
//   gemm_bench [--device cpu|cuda] [--dtype fp32|bf16] [--threads N] [--min-seconds S]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "cli/numbers.h"
#include "cli/parse.h"
#include "tensor/cuda_runtime.h"
#include "tensor/gemm.h"
#include "tensor/precision.h"
#include "tensor/random.h"
#include "tensor/threads.h"

#if RINGGRAD_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace ringgrad;

namespace {

struct Shape3 {
  std::int64_t m, n, k;
  const char* note;
};

// Repeat until `min_seconds` have passed, report the mean FLOP/s.
double flops_per_second(const std::function<void()>& run, double flops, double min_seconds) {
  run();  // warm-up: page in the buffers, start the BLAS threads, pick the cuBLAS kernel
  int reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    run();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < min_seconds);
  return flops * reps / elapsed;
}

// C = A B on `device`, row-major, A [M, K] and B [K, N] uniform in [-1, 1).
struct Problem {
  Tensor a, b, c;
  kernels::GemmArgs<float> args;

  Problem(const Shape3& s, Device device, Generator& gen) {
    a = Tensor::zeros({s.m, s.k}), b = Tensor::zeros({s.k, s.n});
    kernels::uniform_(a, -1, 1, gen);
    kernels::uniform_(b, -1, 1, gen);
    a = a.to(device), b = b.to(device), c = Tensor::zeros({s.m, s.n}, DType::Float32, device);
    args = {false, false, s.m, s.n, s.k, 1.0f, a.data<float>(), s.k, b.data<float>(), s.n, 0.0f, c.data<float>(), s.n};
  }
};

#if RINGGRAD_HAVE_CUDA
// Dense peak TFLOP/s of the cards we know, from NVIDIA's H100 and H200 datasheets (SXM: FP32
// 67, TF32 tensor core 494, BF16 tensor core 989; the datasheets' 989 / 1,979 are with 2:4
// sparsity). ringgrad's fp32 GEMMs do not use TF32, so fp32 is held against the FP32 peak.
std::optional<double> peak_tflops(const std::string& name, MatmulPrecision precision) {
  if (name == "NVIDIA H100 80GB HBM3" || name == "NVIDIA H200") {
    return precision == MatmulPrecision::kBFloat16 ? 989.0 : 67.0;
  }
  return std::nullopt;
}
#endif

void bench_cpu(double min_seconds, int threads) {
  const std::vector<Shape3> shapes = {
      {128, 128, 128, "square"},   {256, 256, 256, "square"},      {512, 512, 512, "square"},
      {1024, 1024, 1024, "square"}, {768, 128, 384, "transformer"}, {768, 128, 512, "transformer"},
      {768, 512, 128, "transformer"}};
  fmt::print("# C = A B, row-major, {} matmul precision; GFLOP/s = 2 M N K / time / 1e9; BLAS threads {}, "
             "OpenBLAS kernels {}\n",
             matmul_precision_name(matmul_precision()), threads, kernels::blas_core_name());
  fmt::print("{:>6} {:>6} {:>6}  {:<12} {:>14} {:>14} {:>8}  {}\n", "M", "N", "K", "shape", "reference", "gemm()",
             "speedup", "gemm() ran on");
  Generator gen(0);
  for (const auto& s : shapes) {
    Problem p(s, kCPU, gen);
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    const double ref = flops_per_second([&] { kernels::gemm_reference(p.args); }, flops, min_seconds) / 1e9;
    const double fast = kernels::has_blas() ? flops_per_second([&] { kernels::gemm(p.args); }, flops, min_seconds) / 1e9 : 0.0;
    fmt::print("{:>6} {:>6} {:>6}  {:<12} {:>14.1f} {:>14.1f} {:>7.1f}x  {}\n", s.m, s.n, s.k, s.note, ref, fast,
               fast / ref, kernels::library_name(kernels::cpu_gemm_library(p.args)));
  }
}

void bench_cuda(Device device, double min_seconds) {
#if RINGGRAD_HAVE_CUDA
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device.index) != cudaSuccess) {
    throw std::runtime_error("gemm_bench: cannot query " + device.str());
  }
  const std::string name = prop.name;
  const std::optional<double> peak = peak_tflops(name, matmul_precision());
  // Square sizes, then a GPT-2-small layer's GEMMs at B T = 8192 rows (C = 768).
  const std::vector<Shape3> shapes = {{1024, 1024, 1024, "square"}, {2048, 2048, 2048, "square"},
                                      {4096, 4096, 4096, "square"}, {8192, 8192, 8192, "square"},
                                      {8192, 2304, 768, "qkv"},      {8192, 768, 768, "attn proj"},
                                      {8192, 3072, 768, "mlp fc"},   {8192, 768, 3072, "mlp proj"}};
  fmt::print("# C = A B on {} ({}), cuBLAS, {} matmul precision; TFLOP/s = 2 M N K / time / 1e12; dense peak {}\n",
             device.str(), name, matmul_precision_name(matmul_precision()),
             peak ? fmt::format("{:.0f} TFLOP/s", *peak) : std::string("n/a"));
  fmt::print("{:>6} {:>6} {:>6}  {:<12} {:>10} {:>8}\n", "M", "N", "K", "shape", "TFLOP/s", "of peak");
  Generator gen(0);
  constexpr int kLaunches = 10;  // per synchronisation, so the wait does not dominate small GEMMs
  for (const auto& s : shapes) {
    Problem p(s, device, gen);
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k) * kLaunches;
    const double tflops = flops_per_second(
                              [&] {
                                for (int i = 0; i < kLaunches; ++i) kernels::gemm_batched(device, p.args);
                                cuda::synchronize(device.index);
                              },
                              flops, min_seconds) /
                          1e12;
    fmt::print("{:>6} {:>6} {:>6}  {:<12} {:>10.1f} {:>8}\n", s.m, s.n, s.k, s.note, tflops,
               peak ? fmt::format("{:.0f}%", 100 * tflops / *peak) : std::string("n/a"));
  }
#else
  static_cast<void>(device), static_cast<void>(min_seconds);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  double min_seconds = 0.3;
  std::string device_name = "cpu", dtype = "fp32";
  CLI::App app{"GEMM throughput: reference kernel vs gemm() (OpenBLAS or oneDNN), or cuBLAS on a GPU"};
  app.add_option("--device", device_name, "cpu or cuda")->capture_default_str();
  app.add_option("--dtype", dtype, "Matmul precision: fp32 or bf16")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--threads", threads, "BLAS threads (CPU), 1 or more")->check(ringgrad::cli::at_least(1));
  app.add_option("--min-seconds", min_seconds, "Time spent per measurement, seconds > 0")->check(ringgrad::cli::kPositive);
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  set_matmul_precision(parse_matmul_precision(dtype));
  Device device;
  try {
    device = Device::parse(device_name);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "gemm_bench: --device: {}\n", e.what());
    return 2;
  }
  try {
    set_num_threads(threads);
  } catch (const std::invalid_argument& e) {  // a bad RINGGRAD_ONEDNN
    fmt::print(stderr, "gemm_bench: {}\n", e.what());
    return 2;
  }
  if (device.is_cpu()) {
    bench_cpu(min_seconds, threads);
  } else if (cuda::device_count() == 0) {
    fmt::print(stderr, "gemm_bench: --device {}: {}\n", device_name, cuda::unavailable_reason());
    return 1;
  } else {
    bench_cuda(device, min_seconds);
  }
}
