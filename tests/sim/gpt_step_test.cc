// The simulated training step (bench/sim/gpt_step.h) against what it is made of: on one GPU the
// step is its FLOPs over the rate, counted here from the formula; data parallelism adds only
// what its last all-reduce leaves exposed; a layout that does not fit is refused by name.
#include <catch2/catch.hpp>

#include "bench/sim/gpt_step.h"

namespace ringgrad::test {
namespace {

using bench::GptShape;
using bench::Layout;
using collectives::sim::Topology;

constexpr double kFlops = 100e12;

// Forward and backward FLOPs of the whole batch: 3 x (24 C^2 + 4 T C) per token and layer, and
// 3 x 2 C V for the head.
double step_flops(const GptShape& s) {
  const double C = s.n_embd, T = s.block_size, tokens = static_cast<double>(s.batch) * T;
  return tokens * 3 * (s.n_layer * (24 * C * C + 4 * T * C) + 2 * C * s.vocab);
}

}  // namespace

TEST_CASE("one GPU's step is its FLOPs over the rate", "[sim]") {
  const GptShape shape{2, 256, 128, 65, 8};
  const auto t = bench::simulate_gpt_step(Topology::parse("hosts=1x1,intra=nvlink5"), shape, Layout{}, kFlops, nullptr);
  CHECK(t.step == Approx(step_flops(shape) / kFlops).epsilon(1e-12));
  CHECK(t.compute == Approx(t.step).epsilon(1e-12));
  CHECK(t.comm == 0);
}

TEST_CASE("data parallelism splits the compute and adds the exposed all-reduce", "[sim]") {
  const GptShape shape{2, 256, 128, 65, 8};
  const auto t = bench::simulate_gpt_step(Topology::parse("hosts=2x2,intra=nvlink5,inter=ib400"), shape, Layout{4, 1, 1, 1, 0},
                                          kFlops, nullptr);
  CHECK(t.compute == Approx(step_flops(shape) / kFlops / 4).epsilon(1e-12));
  CHECK(t.comm > 0);
  CHECK(t.step == Approx(t.compute + t.comm).epsilon(1e-9));
}

TEST_CASE("a pipeline's ranks wait for its bubble and tensor parallelism's all-reduces are exposed", "[sim]") {
  const GptShape shape{4, 256, 128, 65, 8};
  const Topology t = Topology::parse("hosts=1x4,intra=nvlink5");
  const auto pp = bench::simulate_gpt_step(t, shape, Layout{1, 1, 4, 1, 4}, kFlops, nullptr);
  // The first stage finishes last (the last backward is its): one layer, no head.
  CHECK(pp.compute ==
        Approx((step_flops(GptShape{1, 256, 128, 65, 8}) - step_flops(GptShape{0, 256, 128, 65, 8})) / kFlops).epsilon(1e-12));
  CHECK(pp.pipeline > 0);
  const auto tp = bench::simulate_gpt_step(t, shape, Layout{1, 4, 1, 1, 0}, kFlops, nullptr);
  CHECK(tp.comm > 0);
  CHECK(tp.step == Approx(tp.compute + tp.comm).epsilon(1e-9));
}

TEST_CASE("a layout that does not fit is refused with its sizes", "[sim]") {
  const Topology t = Topology::parse("hosts=4x8,intra=nvlink5,inter=ib800");
  REQUIRE_THROWS_WITH(bench::simulate_gpt_step(t, GptShape{}, Layout{8, 2, 1, 1, 0}, kFlops, nullptr),
                      Catch::Contains("= 16 GPUs, the topology has 32"));
  REQUIRE_THROWS_WITH(bench::parse_layout("dp=8,ep=4"), Catch::Contains("unknown 'ep'"));
  REQUIRE_THROWS_WITH(bench::parse_layout("dp=0"), Catch::Contains("not KEY=N with N >= 1"));
}

}  // namespace ringgrad::test
