// 05: sharding. DDP keeps a full copy of parameters, gradients and optimizer state on every
// rank. ZeRO-1 shards the optimizer state, ZeRO-2 the gradients too, FSDP (ZeRO-3) also the
// parameters, rebuilding each layer's weights by all-gather only while it runs. Same training,
// same result; prints the bytes each rank keeps and checks the final models agree.
//
//   build/bin/ringgrad-run --nproc-per-node 2 build/bin/05_zero_and_fsdp
#include <fmt/format.h>

#include <cmath>

#include "autograd/ops.h"
#include "examples/distributed/launch.h"
#include "examples/distributed/toy.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/data_parallel/training_state.h"

using namespace ringgrad;
namespace parallel = ringgrad::nn::parallel;

int main() try {
  parallel::Accelerator acc;
  auto adamw = [](std::vector<nn::ParamGroup> g) { return std::make_unique<nn::AdamW>(std::move(g), nn::AdamOptions{1e-3}); };
  std::vector<float> reference;
  acc.print("{:<10} {:>12} {:>12} {:>12} {:>12} {:>14}\n", "strategy", "params B", "grads B", "optimizer B", "total B",
            "max |diff|");
  for (std::string strategy : {"ddp", "zero1", "zero2", "fsdp"}) {
    auto model = toy::make_model();
    auto dp = acc.prepare(strategy, model, {{model->parameters()}}, adamw);
    const std::int64_t local = acc.local_batch(64);
    for (int step = 0; step < 20; ++step) {
      auto [x, y] = toy::samples(toy::range(step * 64 + acc.rank() * local, local));
      dp->zero_grad();
      dp->backward(cross_entropy(dp->forward(x), y));
      dp->step();
    }
    // Gradients are still held (not zeroed), as during a step: measure now.
    const auto use = parallel::memory_use(*dp);
    std::vector<float> flat;
    for (auto& [name, t] : parallel::full_state_dict(*dp)) {
      if (name.rfind("optimizer", 0) != 0) for (float v : t.to_vector<float>()) flat.push_back(v);
    }
    double diff = 0;
    if (reference.empty()) reference = flat;
    for (std::size_t i = 0; i < flat.size() && acc.is_main_process(); ++i) {
      diff = std::max(diff, static_cast<double>(std::abs(flat[i] - reference[i])));
    }
    acc.print("{:<10} {:>12.0f} {:>12.0f} {:>12.0f} {:>12.0f} {:>14.2e}\n", strategy, use.params, use.grads, use.optimizer,
              use.params + use.grads + use.optimizer, diff);
  }
  acc.print("With {} ranks a sharded state is 1/{} of DDP's: the optimizer's from zero1 on (zero1 still keeps\n"
            "the full gradients, beside the reduced shards), the gradients' from zero2, the parameters' with fsdp.\n",
            acc.world_size(), acc.world_size());
} catch (const std::exception& e) {
  return launch::report("05_zero_and_fsdp", e);
}
