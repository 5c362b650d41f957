// 01: one process. The training step every later example distributes:
// forward, loss, backward, optimizer step. Prints the loss falling.
//
//   build/bin/01_one_process
#include <fmt/format.h>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "examples/distributed/toy.h"
#include "nn/optim.h"

using namespace ringgrad;

int main() {
  auto model = toy::make_model();
  nn::SGD optimizer({{model->parameters()}}, 0.1, 0.9);
  constexpr std::int64_t kBatch = 64;
  for (int step = 0; step < 200; ++step) {
    auto [x, y] = toy::samples(toy::range(step * kBatch, kBatch));
    const Tensor loss = cross_entropy((*model)(x), y);
    optimizer.zero_grad();
    backward(loss);  // every parameter's .grad() now holds d loss / d parameter
    optimizer.step();
    if (step % 40 == 0 || step == 199) fmt::print("step {:>3}  loss {:.4f}\n", step, loss.item<double>());
  }
  fmt::print("One process saw {} samples. Next: split each batch over two processes.\n", 200 * kBatch);
}
