// gemm_bench: GFLOP/s of the reference GEMM kernel and of the CPU BLAS, float32, for square
// sizes and the shapes of a small transformer's layers. FLOPs counted as 2 M N K.
//
//   gemm_bench [--threads N] [--min-seconds S]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <functional>

#include "tensor/gemm.h"
#include "tensor/random.h"
#include "tensor/threads.h"

using namespace ringgrad;

namespace {

// Median-free but steady: repeat until `min_seconds` have passed, report the mean.
double gflops(const std::function<void()>& run, double flops, double min_seconds) {
  run();  // warm-up: page in the buffers, start the BLAS threads
  int reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    run();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < min_seconds);
  return flops * reps / elapsed / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  double min_seconds = 0.3;
  CLI::App app{"GEMM throughput: reference kernel vs CPU BLAS"};
  app.add_option("--threads", threads, "BLAS threads")->check(CLI::PositiveNumber);
  app.add_option("--min-seconds", min_seconds, "Time spent per measurement");
  CLI11_PARSE(app, argc, argv);
  set_num_threads(threads);

  struct Shape3 {
    std::int64_t m, n, k;
    const char* note;
  };
  const std::vector<Shape3> shapes = {
      {128, 128, 128, "square"},   {256, 256, 256, "square"},      {512, 512, 512, "square"},
      {1024, 1024, 1024, "square"}, {768, 128, 384, "transformer"}, {768, 128, 512, "transformer"},
      {768, 512, 128, "transformer"}};
  fmt::print("# float32 C = A B, row-major; GFLOP/s = 2 M N K / time / 1e9; BLAS threads {}, OpenBLAS kernels {}\n",
             threads, kernels::blas_core_name());
  fmt::print("{:>6} {:>6} {:>6}  {:<12} {:>14} {:>14} {:>8}\n", "M", "N", "K", "shape", "reference", "BLAS",
             "speedup");
  Generator gen(0);
  for (const auto& s : shapes) {
    Tensor a = Tensor::zeros({s.m, s.k}), b = Tensor::zeros({s.k, s.n}), c = Tensor::zeros({s.m, s.n});
    kernels::uniform_(a, -1, 1, gen);
    kernels::uniform_(b, -1, 1, gen);
    kernels::GemmArgs<float> g{false, false, s.m, s.n, s.k, 1.0f, a.data<float>(), s.k, b.data<float>(), s.n,
                               0.0f, c.data<float>(), s.n};
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    const double ref = gflops([&] { kernels::gemm_reference(g); }, flops, min_seconds);
    const double blas = kernels::has_blas() ? gflops([&] { kernels::gemm_blas(g); }, flops, min_seconds) : 0.0;
    fmt::print("{:>6} {:>6} {:>6}  {:<12} {:>14.1f} {:>14.1f} {:>7.1f}x\n", s.m, s.n, s.k, s.note, ref, blas,
               blas / ref);
  }
}
