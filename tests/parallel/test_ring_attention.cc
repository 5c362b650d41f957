// Ring attention equals full causal attention: with real processes on 1, 2 and 3 ranks, each
// rank's rows of the output and of the gradient of qkv (from a random upstream gradient) match
// causal_self_attention on the whole sequence in float64 (1e-12).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "collectives/communicator.h"
#include "nn/parallel/model_parallel/ring_attention.h"
#include "tests/parallel/model_parallel_support.h"
#include "tests/support/multiprocess.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using ringgrad::collectives::Communicator;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::max_abs_diff;
using ringgrad::test::run_ranks;

namespace {


}  // namespace

TEST_CASE("ring attention: each rank's rows of output and gradient equal full causal attention on 1, 2 and 3 ranks") {
  for (int cp : {1, 2, 3}) {
    const auto results = run_ranks(cp, [cp](const transport::Config& config) {
      Communicator group(config, collectives::CommOptions{});
      constexpr std::int64_t B = 2, T = 12, C = 8, H = 2;
      manual_seed(9);
      Tensor qkv = Tensor::zeros({B, T, 3 * C}, DType::Float64), upstream = Tensor::zeros({B, T, C}, DType::Float64);
      kernels::uniform_(qkv, -2, 2);
      kernels::uniform_(upstream, -1, 1);
      qkv.set_requires_grad(true);
      const Tensor y = causal_self_attention(qkv, H);
      backward(sum(y * upstream));
      const std::int64_t t = T / cp, first = group.rank() * t;
      Tensor mine = kernels::clone(kernels::narrow(qkv.detach(), 1, first, t)).set_requires_grad(true);
      const Tensor y_ring = nn::parallel::ring_attention(mine, H, group);
      const double dy = max_abs_diff(y_ring, kernels::narrow(y, 1, first, t));
      check(dy < 1e-12, fmt::format("cp {} rank {}: output differs by {}", cp, group.rank(), dy));
      backward(sum(y_ring * kernels::contiguous(kernels::narrow(upstream, 1, first, t))));
      const double dg = max_abs_diff(mine.grad(), kernels::narrow(qkv.grad(), 1, first, t));
      check(dg < 1e-12, fmt::format("cp {} rank {}: gradient differs by {}", cp, group.rank(), dg));
    });
    INFO(describe(results));
    for (const auto& r : results) CHECK(r.ok());
  }
}
