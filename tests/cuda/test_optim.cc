// Optimizer updates on GPU parameters against the same updates on the CPU: SGD with momentum
// and weight decay, AdamW with bias correction and decoupled decay, and clip_grad_norm_.
#include <catch2/catch.hpp>

#include <memory>

#include "gpu_test.h"
#include "nn/optim.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::testing;

namespace {

// Two parameters (a matrix with weight decay, a vector without) on `device`, equal to the CPU
// ones, with three rounds of the same random gradients: compares parameters after each step.
template <typename MakeOptimizer>
std::string compare_steps(MakeOptimizer make) {
  const std::vector<Tensor> init = {random_tensor({33, 17}, 50), random_tensor({17}, 51)};
  std::vector<Tensor> cpu, gpu_params;
  for (const Tensor& p : init) {
    cpu.push_back(kernels::clone(p));
    gpu_params.push_back(to_gpu(p));
  }
  auto cpu_opt = make(std::vector<nn::ParamGroup>{{{cpu[0]}, 0.1}, {{cpu[1]}, 0.0}});
  auto gpu_opt = make(std::vector<nn::ParamGroup>{{{gpu_params[0]}, 0.1}, {{gpu_params[1]}, 0.0}});
  for (std::uint64_t step = 0; step < 3; ++step) {
    for (std::size_t i = 0; i < init.size(); ++i) {
      const Tensor g = random_tensor(init[i].shape(), 60 + 10 * step + i);
      cpu[i].set_grad(g);
      gpu_params[i].set_grad(to_gpu(g));
    }
    cpu_opt->step();
    gpu_opt->step();
    for (std::size_t i = 0; i < init.size(); ++i) {
      if (std::string m = compare(gpu_params[i], cpu[i], kFloat32); !m.empty()) {
        return "step " + std::to_string(step + 1) + ", parameter " + std::to_string(i) + ": " + m;
      }
    }
  }
  return "";
}

}  // namespace

TEST_CASE("cuda SGD: momentum and weight decay steps equal the CPU's") {
  RINGGRAD_REQUIRE_GPU();
  CHECK(compare_steps([](std::vector<nn::ParamGroup> g) { return std::make_unique<nn::SGD>(std::move(g), 0.1, 0.9); }) == "");
}

TEST_CASE("cuda AdamW: steps with bias correction and decoupled decay equal the CPU's") {
  RINGGRAD_REQUIRE_GPU();
  CHECK(compare_steps([](std::vector<nn::ParamGroup> g) {
          return std::make_unique<nn::AdamW>(std::move(g), nn::AdamOptions{1e-2, 0.9, 0.99, 1e-8});
        }) == "");
}

TEST_CASE("cuda clip_grad_norm_: the same total norm and clipped gradients") {
  RINGGRAD_REQUIRE_GPU();
  std::vector<Tensor> cpu, gpu_params;
  for (std::uint64_t i = 0; i < 3; ++i) {
    Tensor p = random_tensor({20, 10 + static_cast<std::int64_t>(i)}, 70 + i), q = to_gpu(p);
    const Tensor g = random_tensor(p.shape(), 80 + i);
    p.set_grad(g);
    q.set_grad(to_gpu(g));
    cpu.push_back(p);
    gpu_params.push_back(q);
  }
  for (double max_norm : {100.0, 0.5}) {  // not clipped, then clipped
    INFO("max_norm " << max_norm);
    const double cpu_norm = nn::clip_grad_norm_(cpu, max_norm), gpu_norm = nn::clip_grad_norm_(gpu_params, max_norm);
    CHECK(gpu_norm == Approx(cpu_norm).epsilon(1e-5));
    for (std::size_t i = 0; i < cpu.size(); ++i) CHECK(compare(gpu_params[i].grad(), cpu[i].grad(), kFloat32) == "");
  }
}
