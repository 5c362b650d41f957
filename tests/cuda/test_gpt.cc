// The whole GPT on a GPU against the same model on the CPU: logits and every parameter's
// gradient of one forward/backward, the loss curve of a few AdamW steps with dropout (fp32 and
// bf16 matmul precision), and a checkpoint saved from GPU tensors and loaded into a GPU model.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "gpu_test.h"
#include "nn/transformer/checkpoint.h"
#include "nn/transformer/train_config.h"
#include "nn/transformer/train_step.h"
#include "tensor/precision.h"
#include "tensor/random.h"

using namespace ringgrad;
using namespace ringgrad::testing;

namespace {

// The tiny preset (2 layers, 2 heads, C 32, T 32) with dropout on, so masks are drawn too.
nn::GPTConfig tiny_config() {
  nn::GPTConfig c = nn::train_preset("tiny").model;
  c.dropout = 0.1;
  return c;
}

// A model with seed-1 weights on `device`: equal on every device.
std::shared_ptr<nn::GPT> make_model(Device device) {
  manual_seed(1);
  auto model = std::make_shared<nn::GPT>(tiny_config());
  model->to(device);
  return model;
}

nn::data::Batch random_batch(std::uint64_t seed, Device device) {
  const nn::GPTConfig c = tiny_config();
  return {random_indices({4, c.block_size}, c.vocab_size, seed).to(device),
          random_indices({4, c.block_size}, c.vocab_size, seed + 1).to(device)};
}

// Losses of `steps` AdamW steps from the seed-1 model, dropout drawn from a reset generator.
std::vector<double> loss_curve(Device device, int steps) {
  auto model = make_model(device);
  nn::AdamW opt(nn::weight_decay_groups(*model, 0.1), {1e-3, 0.9, 0.99, 1e-8});
  manual_seed(7);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    losses.push_back(nn::train_step(*model, opt, random_batch(100 + 2 * static_cast<std::uint64_t>(i), device), 1e-3, 1.0).loss);
  }
  return losses;
}

}  // namespace

TEST_CASE("cuda GPT: logits and all parameter gradients equal the CPU's") {
  RINGGRAD_REQUIRE_GPU();
  auto cpu = make_model(kCPU), on_gpu = make_model(gpu());
  cpu->eval(), on_gpu->eval();  // no dropout: one forward each, compared element by element
  const nn::data::Batch batch = random_batch(90, kCPU);
  const Tensor logits = (*cpu)(batch.x), gpu_logits = (*on_gpu)(to_gpu(batch.x));
  // Two blocks of ~10 float32 ops each: the per-op differences (kFloat32) compound a little.
  const Tolerance tol{1e-4, 1e-3};
  CHECK(compare(gpu_logits, logits, tol) == "");
  backward(cross_entropy(logits, batch.y));
  backward(cross_entropy(gpu_logits, to_gpu(batch.y)));
  const auto cpu_params = cpu->named_parameters(), gpu_params = on_gpu->named_parameters();
  REQUIRE(cpu_params.size() == gpu_params.size());
  for (std::size_t i = 0; i < cpu_params.size(); ++i) {
    INFO(cpu_params[i].first);
    CHECK(compare(gpu_params[i].second.grad(), cpu_params[i].second.grad(), tol) == "");
  }
}

TEST_CASE("cuda GPT: ten training steps with dropout track the CPU's losses, fp32 and bf16") {
  RINGGRAD_REQUIRE_GPU();
  for (MatmulPrecision precision : {MatmulPrecision::kFloat32, MatmulPrecision::kBFloat16}) {
    const bool bf16 = precision == MatmulPrecision::kBFloat16;
    INFO((bf16 ? "bf16" : "fp32"));
    MatmulPrecisionGuard scope(precision);
    const std::vector<double> cpu = loss_curve(kCPU, 10), on_gpu = loss_curve(gpu(), 10);
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      INFO("step " << i);
      CHECK(on_gpu[i] == Approx(cpu[i]).margin(bf16 ? 1e-2 : 1e-4));
    }
  }
}

TEST_CASE("cuda GPT checkpoint: saved from GPU tensors, loaded into a GPU and a CPU model") {
  RINGGRAD_REQUIRE_GPU();
  auto model = make_model(gpu());
  nn::AdamW opt(nn::weight_decay_groups(*model, 0.1), {1e-3, 0.9, 0.99, 1e-8});
  nn::train_step(*model, opt, random_batch(95, gpu()), 1e-3, 1.0);
  const std::string path = (std::filesystem::temp_directory_path() / "ringgrad_cuda_checkpoint.safetensors").string();
  nn::save_checkpoint(path, *model, opt, nn::TrainState{1, Generator(3), Generator(4)});
  // Where the saved run goes next: one more step (dropout from seed 5).
  manual_seed(5);
  nn::train_step(*model, opt, random_batch(97, gpu()), 1e-3, 1.0);

  for (Device device : {gpu(), kCPU}) {
    INFO("loaded on " << device.str());
    manual_seed(99);  // other initial weights: everything must come from the file
    nn::GPT loaded(tiny_config());
    loaded.to(device);
    nn::AdamW loaded_opt(nn::weight_decay_groups(loaded, 0.1), {1e-3, 0.9, 0.99, 1e-8});
    CHECK(nn::load_checkpoint(path, loaded, loaded_opt).iter == 1);
    CHECK(loaded_opt.exp_avg[0][0].device() == device);
    // The same next step from the loaded model and moments lands on the same parameters (up
    // to the order of atomic adds in the embedding backward, and the CPU/GPU difference).
    manual_seed(5);
    nn::train_step(loaded, loaded_opt, random_batch(97, device), 1e-3, 1.0);
    const auto want = model->named_parameters(), got = loaded.named_parameters();
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO(want[i].first);
      CHECK(got[i].second.device() == device);
      CHECK(compare(got[i].second, want[i].second, Tolerance{1e-4, 1e-3}) == "");
    }
  }
  std::remove(path.c_str());
}
