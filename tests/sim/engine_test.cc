// The simulator's machinery: its errors name the ranks, its times are the same every run and
// in both modes, and the two ways of switching fibers agree.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/sim/sim_link.h"
#include "collectives/sim/simulate.h"
#include "transport/error.h"

namespace ringgrad::test {
namespace {

using collectives::Algo;
using collectives::CollKind;
using collectives::sim::Call;
using collectives::sim::FiberSwitch;
using collectives::sim::SimLink;
using collectives::sim::Topology;
using collectives::sim::World;
using collectives::sim::WorldOptions;

WorldOptions with(bool payload, FiberSwitch fibers = collectives::sim::default_fiber_switch()) {
  WorldOptions o;
  o.payload = payload;
  o.fibers = fibers;
  return o;
}

}  // namespace

TEST_CASE("ranks that all receive first wait forever and are named", "[sim]") {
  World world(Topology::uniform(3, 1e-6, 1e-9));
  std::byte b{};
  try {
    world.run([&](SimLink& link) { link.recv((link.rank() + 1) % 3, &b, 1); });
    FAIL("no deadlock reported");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("deadlock") != std::string::npos);
    CHECK(what.find("rank 0 waits for a message from rank 1") != std::string::npos);
    CHECK(what.find("rank 2 waits for a message from rank 0") != std::string::npos);
  }
}

TEST_CASE("a receive of the wrong size names both ranks and both sizes", "[sim]") {
  World world(Topology::uniform(2, 1e-6, 1e-9));
  std::byte b[8]{};
  auto body = [&](SimLink& link) {
    if (link.rank() == 0)
      link.send(1, b, 8);
    else
      link.recv(0, b, 4);
  };
  REQUIRE_THROWS_AS(world.run(body), transport::TransportError);
  REQUIRE_THROWS_WITH(world.run(body), Catch::Contains("rank 1: a receive of 4 bytes from rank 0 met a message of 8 bytes"));
}

TEST_CASE("an exception in one rank reaches run's caller, and the world runs again", "[sim]") {
  World world(Topology::uniform(4, 1e-6, 1e-9));
  REQUIRE_THROWS_WITH(world.run([](SimLink& link) {
    if (link.rank() == 2) throw std::invalid_argument("rank 2 gave up");
  }),
                      "rank 2 gave up");
  CHECK(collectives::sim::simulate(world, Call{CollKind::kAllReduce, Algo::kRing, 1000}).wrong == 0);
}

TEST_CASE("a simulation gives the same times every run, in both modes and on both fiber switches", "[sim]") {
  // Contention on shared NICs and uplinks makes the order of events matter.
  const Topology t = Topology::parse("hosts=4x4,intra=nvlink5,inter=ib400,nic=host,uplink=20");
  for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kHalvingDoubling, Algo::kHierarchical}) {
    const Call call{CollKind::kAllReduce, algo, 1 << 20};
    World payload(t, with(true)), sizes(t, with(false)), plain(t, with(false, FiberSwitch::kUcontext));
    const double first = collectives::sim::simulate(payload, call).seconds;
    INFO(collectives::algo_name(algo));
    CHECK(first > 0);
    CHECK(collectives::sim::simulate(payload, call).seconds == first);
    CHECK(collectives::sim::simulate(sizes, call).seconds == first);
    CHECK(collectives::sim::simulate(plain, call).seconds == first);
  }
}

TEST_CASE("sizes-only buffers are never touched", "[sim]") {
  // They point into address space without access: a copy would fault, so finishing is the test.
  World world(Topology::uniform(8, 1e-6, 1e-9, 1e-10, 5e-11), with(false));
  for (CollKind kind : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kAllToAll, CollKind::kBroadcast})
    for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kHalvingDoubling, Algo::kOneShot, Algo::kPairwise, Algo::kBruck})
      if (collectives::has_algo(kind, algo))
        CHECK(collectives::sim::simulate(
                  world, Call{kind, algo, 1 << 16, collectives::DType::kFloat32, collectives::ReduceOp::SUM, 0, true})
                  .wrong == -1);
}

TEST_CASE("topology presets name what they do not know", "[sim]") {
  CHECK(Topology::parse("hosts=4x8,intra=nvlink5,inter=ib800").world_size() == 32);
  CHECK(Topology::parse("hosts=2x2,intra=shm,inter=tcp1g").layout().hosts() == 2);
  REQUIRE_THROWS_WITH(Topology::parse("hosts=4x8,intra=nvlink9"), Catch::Contains("unknown link 'nvlink9'"));
  REQUIRE_THROWS_WITH(Topology::parse("hosts=4"), Catch::Contains("must read HOSTSxRANKS"));
  REQUIRE_THROWS_WITH(Topology::parse("gpus=8"), Catch::Contains("unknown key 'gpus'"));
  REQUIRE_THROWS_WITH(Topology::parse("missing.json"), Catch::Contains("cannot read missing.json"));
}

}  // namespace ringgrad::test
