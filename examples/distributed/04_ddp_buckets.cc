// 04: DDP. Gradients are packed into buckets in the order backward produces them (last layer
// first); each bucket's all-reduce starts from an autograd hook the moment its last gradient is
// ready, and runs on the communicator's thread while backward continues. Prints the buckets,
// and how long the training thread waited for communication with and without that overlap.
//
//   build/bin/ringgrad-run --nproc-per-node 2 build/bin/04_ddp_buckets
#include <fmt/format.h>

#include "autograd/ops.h"
#include "examples/distributed/launch.h"
#include "examples/distributed/toy.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/data_parallel/ddp.h"

using namespace ringgrad;
namespace parallel = ringgrad::nn::parallel;

namespace {

// Trains 100 steps with `strategy`; returns the seconds spent waiting on communication.
double train(parallel::Accelerator& acc, const std::string& strategy, double bucket_cap_mb) {
  auto model = toy::make_model();
  auto sgd = [](std::vector<nn::ParamGroup> g) { return std::make_unique<nn::SGD>(std::move(g), 0.1, 0.9); };
  parallel::DataParallelOptions options;
  options.bucket_cap_mb = bucket_cap_mb;
  auto dp = acc.prepare(strategy, model, {{model->parameters()}}, sgd, options);
  if (auto* ddp = dynamic_cast<parallel::DistributedDataParallel*>(dp.get())) {
    const auto names = model->named_parameters();
    for (const auto& bucket : ddp->bucket_members()) {
      std::vector<std::string> members;
      for (std::size_t i : bucket) members.push_back(names[i].first);
      acc.print("  bucket: {}\n", fmt::join(members, ", "));
    }
  }
  const std::int64_t local = acc.local_batch(64);
  Tensor loss;
  for (int step = 0; step < 100; ++step) {
    auto [x, y] = toy::samples(toy::range(step * 64 + acc.rank() * local, local));
    dp->zero_grad();
    loss = cross_entropy(dp->forward(x), y);
    dp->backward(loss);  // buckets start their all-reduce inside; it returns with them averaged
    dp->step();          // only updates
  }
  return dp->stats().wait_seconds;
}

}  // namespace

int main() try {
  parallel::Accelerator acc;
  acc.print("ddp with 8 KiB buckets (so this small model gets several):\n");
  const double overlapped = train(acc, "ddp", 8.0 / 1024);
  const double naive = train(acc, "ddp-naive", 25);
  acc.print("waiting on communication over 100 steps: ddp {:.1f} ms, ddp-naive {:.1f} ms\n", overlapped * 1e3, naive * 1e3);
  acc.print("ddp-naive all-reduces each gradient after backward, one by one; ddp starts each bucket during\n"
            "backward, so only what is still in flight when backward ends is waited for.\n");
} catch (const std::exception& e) {
  return launch::report("04_ddp_buckets", e);
}
