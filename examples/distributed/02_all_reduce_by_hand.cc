// 02: two processes, gradients averaged by hand. Each rank takes half of every batch, runs
// backward on its half, then all-reduces each gradient (sum over ranks / world size). The
// averaged gradient equals the gradient of the whole batch, so both ranks take the same step
// and stay identical, and they match example 01.
//
//   build/bin/ringgrad-run --nproc-per-node 2 build/bin/02_all_reduce_by_hand
#include <fmt/format.h>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "examples/distributed/launch.h"
#include "examples/distributed/toy.h"
#include "nn/optim.h"
#include "nn/parallel/tensor_buffer.h"

using namespace ringgrad;

int main() try {
  collectives::Communicator comm(launch::job_or_exit("02_all_reduce_by_hand"));
  const int rank = comm.rank(), world = comm.world_size();
  auto model = toy::make_model();  // same seed on every rank: the same starting point
  nn::SGD optimizer({{model->parameters()}}, 0.1, 0.9);
  constexpr std::int64_t kBatch = 64;  // global batch, as in example 01
  const std::int64_t local = kBatch / world;
  for (int step = 0; step < 200; ++step) {
    // This rank's slice of the global batch.
    auto [x, y] = toy::samples(toy::range(step * kBatch + rank * local, local));
    const Tensor loss = cross_entropy((*model)(x), y);
    optimizer.zero_grad();
    backward(loss);
    for (const Tensor& p : model->parameters()) {
      auto g = nn::parallel::synced_buffer(p.grad());
      comm.all_reduce(g, g, collectives::ReduceOp::AVG);  // in place: sum over ranks, / world
    }
    optimizer.step();
    if ((step % 40 == 0 || step == 199) && rank == 0) {
      fmt::print("step {:>3}  loss on rank 0's half {:.4f}\n", step, loss.item<double>());
    }
  }
  // Do the replicas agree? Compare a checksum of all parameters across ranks.
  double checksum = 0;
  for (const Tensor& p : model->parameters()) {
    for (float v : p.to_vector<float>()) checksum += v;
  }
  std::vector<double> all(static_cast<std::size_t>(world));
  comm.all_gather(collectives::buffer(std::span<const double>(&checksum, 1)), collectives::buffer(std::span<double>(all)));
  if (rank == 0) {
    fmt::print("parameter checksums by rank: {}\n", fmt::join(all, ", "));
    fmt::print("{} ranks with {} samples each per step trained the same model as one process with {}.\n", world,
               local, kBatch);
  }
} catch (const std::exception& e) {
  return launch::report("02_all_reduce_by_hand", e);
}
