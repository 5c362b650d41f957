// Devices without a GPU: names parse as PyTorch's, and asking for GPU memory where there is
// none (a build without CUDA, or a machine without a driver or GPU) throws a clear
// std::runtime_error instead of crashing. The GPU-vs-CPU tests are in tests/cuda.
#include <catch2/catch.hpp>

#include "tensor/cuda_runtime.h"
#include "tensor/dropout.h"
#include "tensor/tensor.h"

using namespace ringgrad;

TEST_CASE("Device::parse reads cpu, cuda and cuda:N and rejects anything else") {
  CHECK(Device::parse("cpu") == kCPU);
  CHECK(Device::parse("cuda") == cuda_device(0));
  CHECK(Device::parse("cuda:0") == cuda_device(0));
  CHECK(Device::parse("cuda:3") == cuda_device(3));
  CHECK(Device::parse("cuda:3").str() == "cuda:3");
  CHECK(kCPU.str() == "cpu");
  for (const char* bad : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:1x", "cuda:x", "cpu:0", " cuda"}) {
    INFO("device name '" << bad << "'");
    CHECK_THROWS_AS(Device::parse(bad), std::invalid_argument);
  }
  CHECK_THROWS_WITH(Device::parse("gpu"), Catch::Contains("gpu") && Catch::Contains("cuda:N"));
}

TEST_CASE("without a GPU, a tensor on cuda throws a std::runtime_error that says why") {
  if (cuda::device_count() > 0) {
    WARN("skipped: a GPU is visible, so GPU tensors can be made (tests/cuda covers them)");
    return;
  }
  const std::string why = cuda::unavailable_reason();
  REQUIRE_FALSE(why.empty());
  CHECK_THROWS_AS(Tensor::zeros({2, 3}, DType::Float32, cuda_device(0)), std::runtime_error);
  CHECK_THROWS_WITH(Tensor::zeros({2, 3}, DType::Float32, cuda_device(0)), Catch::Contains("cuda:0") && Catch::Contains(why));
  CHECK_THROWS_WITH(Tensor::ones({4}).to(Device::parse("cuda")), Catch::Contains("cuda:0") && Catch::Contains(why));
  CHECK_THROWS_WITH(Tensor::empty({0}, DType::Int64, cuda_device(1)), Catch::Contains("cuda:1") && Catch::Contains(why));
  // Module::to moves storages in place: the same check, and the tensor stays on the CPU.
  Tensor t = Tensor::ones({3});
  CHECK_THROWS_WITH(t.storage()->move_to(cuda_device(0)), Catch::Contains("cuda:0") && Catch::Contains(why));
  CHECK(t.device() == kCPU);
  CHECK(t.to_vector<float>() == std::vector<float>{1, 1, 1});
  Generator gen(1);
  CHECK_THROWS_AS(kernels::dropout_mask({4}, 0.5, DType::Float32, gen, cuda_device(0)), std::runtime_error);
  CHECK(gen.offset() == 0);  // nothing was drawn
  // The CPU is unaffected.
  CHECK(Tensor::ones({2}).to(kCPU).to_vector<float>() == std::vector<float>{1, 1});
}
