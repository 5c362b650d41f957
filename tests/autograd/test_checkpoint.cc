// checkpoint() (autograd/checkpoint.h) on small graphs: its gradients against central
// differences (float64; tolerance that of test_gradcheck.cc), bit for bit against the same
// graph recorded whole, dropout's masks replayed, only the inputs kept between forward and
// backward, and the cases where it steps aside.
#include <catch2/catch.hpp>

#include <cmath>

#include "autograd/checkpoint.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "support/gradcheck.h"
#include "tensor/block_cache.h"
#include "tensor/random.h"
#include "tensor/storage.h"
#include "tensor/view.h"

using namespace ringgrad;
using ringgrad::testing::gradcheck;
using ringgrad::testing::random_input;
using Inputs = std::vector<Tensor>;

namespace {

// A region with a matrix product, a non-linearity, dropout and a residual: y = dropout(gelu(x w1)) w2 + x.
Tensor region_body(const Tensor& x, const Tensor& w1, const Tensor& w2, double p) {
  return matmul(dropout(gelu(matmul(x, w1)), p, true), w2) + x;
}

}  // namespace

TEST_CASE("checkpoint: gradients of the inputs and of the parameters read inside match central differences") {
  const Tensor x = random_input({3, 4}, 1), w1 = random_input({4, 5}, 2), w2 = random_input({5, 4}, 3);
  // w1 and w2 are read inside the region without being its inputs, as a module's parameters
  // are: their gradients come from the nested backward.
  CHECK(gradcheck([](const Inputs& in) {
          return checkpoint([&](const Inputs& r) { return region_body(r[0], in[1], in[2], 0.0); }, {in[0]});
        }, {x, w1, w2}) == "");
  // Two inputs, one of them used twice, and softmax.
  CHECK(gradcheck([](const Inputs& in) {
          return checkpoint([](const Inputs& r) { return softmax(r[0] * r[1], 1) * r[0]; }, {in[0], in[1]});
        }, {x, random_input({3, 4}, 4)}) == "");
}

TEST_CASE("checkpoint: the same gradients bit for bit as the graph recorded whole, dropout's masks replayed") {
  for (const DType dtype : {DType::Float64, DType::Float32}) {
    auto make = [&](const Shape& shape, std::uint64_t seed) {
      Tensor t = kernels::to_dtype(random_input(shape, seed).detach(), dtype);
      t.set_requires_grad(true);
      return t;
    };
    struct Run {
      std::vector<double> loss, dx, dw1, dw2;
      std::uint64_t rng_offset;
    };
    auto run = [&](bool checkpointed) {
      Tensor x0 = make({6, 8}, 5), w1 = make({8, 16}, 6), w2 = make({16, 8}, 7);
      manual_seed(42);
      const Tensor x = x0 * 2.0;  // the region's input comes from a node, not a leaf
      const Tensor y = checkpointed
                           ? checkpoint([&](const Inputs& r) { return region_body(r[0], w1, w2, 0.5); }, {x})
                           : region_body(x, w1, w2, 0.5);
      const Tensor loss = sum(y * y);
      backward(loss);
      return Run{loss.to_vector<double>(), x0.grad().to_vector<double>(), w1.grad().to_vector<double>(),
                 w2.grad().to_vector<double>(), default_generator().offset()};
    };
    const Run whole = run(false), replayed = run(true);
    CHECK(replayed.loss == whole.loss);
    CHECK(replayed.dx == whole.dx);
    CHECK(replayed.dw1 == whole.dw1);
    CHECK(replayed.dw2 == whole.dw2);
    // The generator is left where the forward left it: the replay's draws are undone.
    CHECK(replayed.rng_offset == whole.rng_offset);
    CHECK(whole.rng_offset > 0);
  }
}

TEST_CASE("checkpoint: between forward and backward only the output is added to what is alive") {
  // Float64 [64, 64] tensors are 32 KiB, a size the host cache serves exactly.
  const Tensor x = random_input({64, 64}, 8), w1 = random_input({64, 64}, 9), w2 = random_input({64, 64}, 10);
  const Tensor a = x * 1.0;
  const std::size_t tensor_bytes = BlockCache::round(64 * 64 * 8);
  REQUIRE(tensor_bytes == 64 * 64 * 8);
  const std::size_t before = host_memory_stats().in_use;
  {
    const Tensor y = checkpoint([&](const Inputs& r) { return region_body(r[0], w1, w2, 0.0); }, {a});
    CHECK(host_memory_stats().in_use - before == tensor_bytes);  // y; x w1 and gelu(x w1) are gone
    backward(sum(y));
  }
  {
    const std::size_t before_whole = host_memory_stats().in_use;  // the gradients of x, w1, w2 are alive now
    const Tensor y = region_body(a, w1, w2, 0.0);
    // Recorded whole: x w1 (gelu's input) and gelu(x w1) (the second product's input) stay too.
    CHECK(host_memory_stats().in_use - before_whole == 3 * tensor_bytes);
  }
}

TEST_CASE("checkpoint: steps aside without grad mode or without an input that requires grad") {
  const Tensor w = random_input({3, 3}, 11);
  const Tensor data = random_input({2, 3}, 12).detach();  // requires no grad, as a batch of inputs
  // No input requires grad: the region is recorded as usual, so w still gets its gradient.
  const Tensor y = checkpoint([&](const Inputs& r) { return matmul(r[0], w); }, {data});
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() != "checkpoint");
  backward(sum(y));
  // d sum(data w) / d w[i][j] = sum over rows of data[:, i].
  const std::vector<double> d = data.to_vector<double>(), g = w.grad().to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) CHECK(g[static_cast<std::size_t>(i * 3 + j)] == d[static_cast<std::size_t>(i)] + d[static_cast<std::size_t>(3 + i)]);
  // Grad mode off: nothing is recorded at all.
  NoGradGuard no_grad;
  const Tensor x = random_input({2, 3}, 13);
  CHECK(checkpoint([&](const Inputs& r) { return matmul(r[0], w); }, {x}).grad_fn() == nullptr);
}
