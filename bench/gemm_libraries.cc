// gemm_libraries: the CPU GEMM libraries Debian packages, timed on the GEMMs of one GPT training
// step (forward and backward of every Linear, and attention's per-head products), so the
// library ringgrad calls is chosen by measurement rather than by reputation. Each library is
// loaded with dlopen, so a missing one is a skipped column (named, with its Debian package),
// not a build error:
//   OpenBLAS  the call ringgrad's ops make (tensor/gemm_blas.cc; kernels by CPU model, named by
//             OPENBLAS_CORETYPE, SkylakeX by default where AVX-512 is: tensor/openblas.h)
//   oneDNN    dnnl_sgemm (libdnnl2; JIT kernels chosen by the CPU's instruction sets, capped by
//             DNNL_MAX_CPU_ISA, e.g. AVX2)
//   BLIS      its cblas_sgemm (libblis4; kernels by CPU model)
//   ringgrad  gemm(), what the tensor ops call: oneDNN for the products its kernels ran faster
//             (with AVX-512 the large ones, with AVX2 the small and the NN ones), OpenBLAS for
//             the rest (tensor/onednn.h)
// Single-threaded (one thread per rank is how the examples run). Rounds interleave the
// libraries, after each library's C was checked against the reference kernel for every
// shape; each cell is the median over rounds of the milliseconds one step spends on that
// GEMM shape (its call count included), with GFLOP/s = 2 M N K calls / time. The operands are
// the same buffers call after call, so warm in cache: a step walking across layers and heads
// reads colder ones, so these times are a floor.
//
//   gemm_libraries [--batch 12] [--block_size 64] [--n_embd 128] [--n_head 4] [--n_layer 4]
//                  [--vocab 65] [--rounds 5] [--min-seconds 0.05] [--library OpenBLAS ...]
#include <CLI/CLI.hpp>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/numbers.h"
#include "cli/parse.h"
#include "tensor/gemm.h"
#include "tensor/onednn.h"
#include "tensor/threads.h"

namespace {

// One row-major GEMM shape of the step, C = op(A) op(B), called `calls` times per step.
struct GemmShape {
  bool trans_a, trans_b;
  std::int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  std::int64_t calls;
  std::string what;
};

struct Model {
  std::int64_t batch = 12, block_size = 64, n_embd = 128, n_head = 4, n_layer = 4, vocab = 65;
};

// Every GEMM a GPT step on `batch` sequences runs on the CPU (tensor/linear.cc and
// tensor/attention.cc): per Linear y = x W^T (+ b), dx = dy W, dW = dy^T x; per head and
// sequence S = Q K^T, Y = P V and their four backward products, on q, k, v strided in one
// [T, 3C] qkv row.
std::vector<GemmShape> step_shapes(const Model& g) {
  const std::int64_t rows = g.batch * g.block_size, c = g.n_embd, t = g.block_size, hs = c / g.n_head;
  std::vector<GemmShape> shapes;
  struct Linear {
    std::int64_t in, out, calls;
    const char* name;
  };
  for (const Linear& l : {Linear{c, 3 * c, g.n_layer, "c_attn"}, Linear{c, c, g.n_layer, "attn.c_proj"},
                          Linear{c, 4 * c, g.n_layer, "mlp.c_fc"}, Linear{4 * c, c, g.n_layer, "mlp.c_proj"},
                          Linear{c, g.vocab, 1, "lm_head"}}) {
    shapes.push_back({false, true, rows, l.out, l.in, l.in, l.in, l.out, 1, 1, l.calls, fmt::format("{} y", l.name)});
    shapes.push_back({false, false, rows, l.in, l.out, l.out, l.in, l.in, 1, 0, l.calls, fmt::format("{} dx", l.name)});
    shapes.push_back({true, false, l.out, l.in, rows, l.out, l.in, l.in, 1, 0, l.calls, fmt::format("{} dW", l.name)});
  }
  const std::int64_t heads = g.batch * g.n_head * g.n_layer, qkv = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));  // attention's 1 / sqrt(head size)
  shapes.push_back({false, true, t, t, hs, qkv, qkv, t, scale, 0, heads, "S = Q K^T"});
  shapes.push_back({false, false, t, hs, t, t, qkv, c, 1, 0, heads, "Y = P V"});
  shapes.push_back({true, false, t, hs, t, t, c, qkv, 1, 0, heads, "dV = P^T dY"});
  shapes.push_back({false, true, t, t, hs, c, qkv, t, 1, 0, heads, "dP = dY V^T"});
  shapes.push_back({false, false, t, hs, t, t, qkv, qkv, scale, 0, heads, "dQ = dS K"});
  shapes.push_back({true, false, t, hs, t, t, qkv, qkv, scale, 0, heads, "dK = dS^T Q"});
  return shapes;
}

using Gemm = std::function<void(const GemmShape&, const float* a, const float* b, float* c)>;
struct Library {
  std::string name;
  Gemm run;
};

// CBLAS's row-major sgemm, as BLIS exports it (the enum values are CBLAS's: RowMajor 101,
// NoTrans 111, Trans 112), declared here so the bench needs no second cblas.h.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

template <typename F>
F load(const char* library, const char* symbol) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  return lib == nullptr ? nullptr : reinterpret_cast<F>(dlsym(lib, symbol));
}

int i32(std::int64_t v) { return static_cast<int>(v); }

// The libraries that load here, each behind the same row-major call.
std::vector<Library> load_libraries() {
  using ringgrad::kernels::GemmArgs;
  std::vector<Library> libs;
  if (ringgrad::kernels::has_blas()) {  // exactly the call ringgrad's ops make (tensor/gemm_blas.cc)
    libs.push_back({fmt::format("OpenBLAS {}", ringgrad::kernels::blas_core_name()),
                    [](const GemmShape& s, const float* a, const float* b, float* c) {
                      ringgrad::kernels::gemm_blas(GemmArgs<float>{s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, s.lda, b,
                                                                   s.ldb, s.beta, c, s.ldc});
                    }});
  } else {
    fmt::print("# OpenBLAS: not loaded (ringgrad was built without it, or libopenblas0 is missing)\n");
  }
  // What the ops get: gemm() picks oneDNN or OpenBLAS per product (tensor/onednn.h).
  libs.push_back({"ringgrad gemm()", [](const GemmShape& s, const float* a, const float* b, float* c) {
                    ringgrad::kernels::gemm(GemmArgs<float>{s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, s.lda, b,
                                                            s.ldb, s.beta, c, s.ldc});
                  }});
  if (auto sgemm = load<ringgrad::kernels::DnnlSgemm>("libdnnl.so.2", "dnnl_sgemm")) {
    libs.push_back({"oneDNN", [sgemm](const GemmShape& s, const float* a, const float* b, float* c) {
                      if (sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, s.alpha, a, s.lda, b, s.ldb,
                                s.beta, c, s.ldc) != 0) {
                        throw std::runtime_error("dnnl_sgemm failed on " + s.what);
                      }
                    }});
  } else {
    fmt::print("# oneDNN: libdnnl.so.2 not loaded (apt install libdnnl2)\n");
  }
  if (auto sgemm = load<CblasSgemm>("libblis.so.4", "cblas_sgemm")) {
    libs.push_back({"BLIS", [sgemm](const GemmShape& s, const float* a, const float* b, float* c) {
                      sgemm(101, s.trans_a ? 112 : 111, s.trans_b ? 112 : 111, i32(s.m), i32(s.n), i32(s.k), s.alpha, a,
                            i32(s.lda), b, i32(s.ldb), s.beta, c, i32(s.ldc));
                    }});
  } else {
    fmt::print("# BLIS: libblis.so.4 not loaded (apt install libblis4)\n");
  }
  return libs;
}

// Largest |difference| between `gemm`'s C and the reference kernel's for shape `s`, both from
// the same C (taken from `start`, so beta = 1 is checked too), relative to K: a library called
// with the wrong layout shows here, not as a fast time.
double error_against_reference(const Gemm& gemm, const GemmShape& s, const std::vector<float>& a,
                               const std::vector<float>& b, const std::vector<float>& start) {
  std::vector<float> got(start.begin(), start.begin() + s.m * s.ldc), want = got;
  gemm(s, a.data(), b.data(), got.data());
  ringgrad::kernels::gemm_reference(ringgrad::kernels::GemmArgs<float>{
      s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a.data(), s.lda, b.data(), s.ldb, s.beta, want.data(), s.ldc});
  double worst = 0;
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * s.ldc + j);
      worst = std::max(worst, static_cast<double>(std::abs(got[at] - want[at])));
    }
  }
  return worst / static_cast<double>(s.k);
}

// Seconds one step spends on `s`: its calls repeated until `min_seconds` have passed.
double seconds_per_step(const Gemm& gemm, const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b,
                        std::vector<float>& c, double min_seconds) {
  gemm(s, a.data(), b.data(), c.data());  // warm-up: caches, JIT, the library's buffers
  int reps = 0;
  double elapsed = 0;
  const auto start = std::chrono::steady_clock::now();
  do {
    for (std::int64_t i = 0; i < s.calls; ++i) gemm(s, a.data(), b.data(), c.data());
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < min_seconds);
  return elapsed / reps;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Model model;
  int rounds = 5;
  double min_seconds = 0.05;
  CLI::App app{"The CPU GEMM libraries on one GPT step's GEMMs (single-threaded)"};
  // The model's sizes, each a whole number of at least 1.
  struct SizeFlag {
    const char* name;
    std::int64_t* value;
    const char* help;
  };
  const SizeFlag size_flags[] = {{"--batch", &model.batch, "Sequences per step (per rank)"},
                                 {"--block_size", &model.block_size, "Context length T"},
                                 {"--n_embd", &model.n_embd, "Width C"},
                                 {"--n_head", &model.n_head, "Heads (C must divide by it)"},
                                 {"--n_layer", &model.n_layer, "Blocks"},
                                 {"--vocab", &model.vocab, "Vocabulary (the head's width)"}};
  for (const SizeFlag& f : size_flags) {
    app.add_option(f.name, *f.value, f.help)->check(ringgrad::cli::at_least(1))->capture_default_str();
  }
  app.add_option("--rounds", rounds, "Interleaved rounds (the median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--min-seconds", min_seconds, "Time per measurement")->check(CLI::PositiveNumber);
  std::vector<std::string> only;
  app.add_option("--library", only, "Time only these (repeatable); all that load by default")
      ->check(CLI::IsMember({"OpenBLAS", "oneDNN", "BLIS", "ringgrad"}));
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  if (model.n_embd % model.n_head != 0) {
    fmt::print(stderr, "gemm_libraries: --n_embd {} does not divide into --n_head {}\n", model.n_embd, model.n_head);
    return 2;
  }
  // One thread each: OpenBLAS by its call; oneDNN (OpenMP) and BLIS read theirs from the
  // environment as they load, unless the user set them.
  setenv("OMP_NUM_THREADS", "1", 0);  // before any library loads (an OpenMP OpenBLAS would read it)
  setenv("BLIS_NUM_THREADS", "1", 0);
  try {
    ringgrad::set_num_threads(1);
  } catch (const std::invalid_argument& e) {  // a bad RINGGRAD_ONEDNN
    fmt::print(stderr, "gemm_libraries: {}\n", e.what());
    return 2;
  }
  const std::vector<GemmShape> shapes = step_shapes(model);
  std::vector<Library> libs = load_libraries();
  std::erase_if(libs, [&](const Library& l) {  // OpenBLAS's name goes on with its kernels'
    return !only.empty() && std::ranges::none_of(only, [&](const std::string& name) { return l.name.starts_with(name); });
  });
  if (libs.empty()) {
    fmt::print(stderr, "gemm_libraries: none of the libraries asked for loaded\n");
    return 1;
  }
  std::int64_t largest = 0;
  for (const GemmShape& s : shapes) {
    largest = std::max({largest, ringgrad::kernels::operand_span(s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k, s.lda),
                        ringgrad::kernels::operand_span(s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n, s.ldb), s.m * s.ldc});
  }
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> a(static_cast<std::size_t>(largest)), b(a.size()), c(a.size());
  for (auto* v : {&a, &b, &c}) std::generate(v->begin(), v->end(), [&] { return uniform(gen); });

  for (const Library& lib : libs) {
    for (const GemmShape& s : shapes) {
      if (const double err = error_against_reference(lib.run, s, a, b, c); err > 1e-6) {
        fmt::print(stderr, "gemm_libraries: {} disagrees with the reference kernel on {} ({:g} per unit of K)\n",
                   lib.name, s.what, err);
        return 1;
      }
    }
  }
  std::vector<std::vector<std::vector<double>>> seconds(libs.size(), std::vector<std::vector<double>>(shapes.size()));
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t l = 0; l < libs.size(); ++l) {
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        seconds[l][i].push_back(seconds_per_step(libs[l].run, shapes[i], a, b, c, min_seconds));
      }
    }
  }
  fmt::print("# ms per step (GFLOP/s) per GEMM shape, single-threaded, median of {} interleaved rounds\n", rounds);
  fmt::print("{:<18} {:>2} {:>5} {:>5} {:>5} {:>5}", "GEMM", "op", "M", "N", "K", "calls");
  for (const Library& l : libs) fmt::print(" {:>20}", l.name);
  fmt::print("\n");
  std::vector<double> total(libs.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    fmt::print("{:<18} {}{} {:>5} {:>5} {:>5} {:>5}", s.what, s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, s.calls);
    for (std::size_t l = 0; l < libs.size(); ++l) {
      const double t = median(seconds[l][i]);
      total[l] += t;
      fmt::print(" {:>11.3f} ({:>5.1f})", t * 1e3, 2.0 * static_cast<double>(s.m * s.n * s.k * s.calls) / t / 1e9);
    }
    fmt::print("\n");
  }
  double flops = 0;
  for (const GemmShape& s : shapes) flops += 2.0 * static_cast<double>(s.m * s.n * s.k * s.calls);
  fmt::print("{:<45}", "the step's GEMMs (ms)");
  for (const double t : total) fmt::print(" {:>20.2f}", t * 1e3);
  fmt::print("\n{:<45}", fmt::format("the step's GEMMs ({:.3f} GFLOP): GFLOP/s", flops / 1e9));
  for (const double t : total) fmt::print(" {:>20.1f}", flops / t / 1e9);
  fmt::print("\n");
  if (std::ranges::any_of(libs, [](const Library& l) { return l.name.starts_with("ringgrad"); })) {
    const auto on_onednn = std::ranges::count_if(shapes, [](const GemmShape& s) {
      using namespace ringgrad::kernels;
      return cpu_gemm_library(GemmArgs<float>{s.trans_a, s.trans_b, s.m, s.n, s.k}) == CpuGemmLibrary::kOneDnn;
    });
    fmt::print("# ringgrad gemm() ran {} of the {} shapes on oneDNN, the others on OpenBLAS\n", on_onednn, shapes.size());
  }
}
