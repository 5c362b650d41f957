// Every collective and every algorithm on simulated ranks (payload mode), checked element by
// element against the serial reference (collectives/reference.h) on every rank, at p = 2-9, 16,
// 63, 64, 100 and 256. Counts 0, 1 and 7, in and out of place, at every p; 1000 elements with
// 256-byte pieces at every p (many pieces and segments on every path; 100 past p = 64 where the
// buffers grow with p); 1000003 elements at
// p = 2, 3, 5 and 8, where the buffers that grow with p (gathers, scatters, all-to-all, one-shot)
// stop at p = 5, to keep the test within a few hundred MiB; every dtype and op at p = 2-7 (past 7
// ranks bfloat16 sums and uint8 products are no longer exact, whatever the order). The ranks
// sit on hosts of a uniform layout (p = 64: 8 hosts x 8), so the hierarchical all-reduce runs
// its three rings wherever p is not prime. p = 2-9 run twice: on each way of switching fibers.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <vector>

#include "collectives/sim/simulate.h"

namespace ringgrad::test {
namespace {

using collectives::Algo;
using collectives::CollKind;
using collectives::DType;
using collectives::ReduceOp;
using collectives::sim::Call;
using collectives::sim::FiberSwitch;
using collectives::sim::Topology;
using collectives::sim::World;
using collectives::sim::WorldOptions;

struct KindAlgos {
  CollKind kind;
  std::vector<Algo> algos;
};
const std::vector<KindAlgos> kEvery = {
    {CollKind::kAllReduce, {Algo::kRing, Algo::kTree, Algo::kHalvingDoubling, Algo::kOneShot, Algo::kHierarchical}},
    {CollKind::kBroadcast, {Algo::kRing, Algo::kTree}},
    {CollKind::kReduce, {Algo::kRing, Algo::kTree}},
    {CollKind::kAllGather, {Algo::kRing}},
    {CollKind::kReduceScatter, {Algo::kRing}},
    {CollKind::kGather, {Algo::kLinear}},
    {CollKind::kScatter, {Algo::kLinear}},
    {CollKind::kAllToAll, {Algo::kPairwise, Algo::kBruck}},
    {CollKind::kAllToAllV, {Algo::kPairwise}},
    {CollKind::kBatchSendRecv, {Algo::kAuto}},
    {CollKind::kSend, {Algo::kAuto}},
    {CollKind::kBarrier, {Algo::kAuto}},
};

// p ranks as H hosts of L: L the largest divisor of p up to sqrt(p) (1 host where p is prime).
Topology layout(int p) {
  int l = 1;
  for (int d = 2; d * d <= p; ++d)
    if (p % d == 0) l = d;
  Topology t = Topology::parse("intra=nvlink5,inter=ib800");
  t.hosts = l == 1 ? 1 : p / l;
  t.ranks_per_host = l == 1 ? p : l;
  return t;
}

// Buffers that hold p blocks, or a whole vector per rank on every rank.
bool grows_with_p(CollKind kind, Algo algo) {
  return kind == CollKind::kAllGather || kind == CollKind::kReduceScatter || kind == CollKind::kGather ||
         kind == CollKind::kScatter || kind == CollKind::kAllToAll || kind == CollKind::kAllToAllV || algo == Algo::kOneShot;
}

// Runs `call` on `world` and checks every rank's output; the case is named on failure.
void check_call(World& world, const Call& call) {
  const auto r = collectives::sim::simulate(world, call);
  INFO(fmt::format("p={} {} algo={} dtype={} op={} count={} {} chunk={}", world.size(), collectives::coll_name(call.kind),
                   collectives::algo_name(call.algo), collectives::dtype_name(call.dtype), collectives::reduce_op_name(call.op),
                   call.count, call.in_place ? "in place" : "out of place", world.options().chunk_bytes));
  CHECK(r.wrong == 0);
  CHECK(r.seconds >= 0);
}

void every_collective(int p, FiberSwitch fibers = collectives::sim::default_fiber_switch()) {
  WorldOptions options;
  options.fibers = fibers;
  World world(layout(p), options);
  WorldOptions small_pieces = options;
  small_pieces.chunk_bytes = 256;
  World pieces(layout(p), small_pieces);
  const int root = p / 2;  // not 0: the trees and chains turn around it
  for (const KindAlgos& k : kEvery)
    for (Algo algo : k.algos) {
      for (std::size_t count : {0, 1, 7})
        for (bool in_place : {false, true})
          check_call(world, Call{k.kind, algo, count, DType::kFloat32, ReduceOp::SUM, root, in_place});
      check_call(pieces, Call{k.kind, algo, p > 64 && grows_with_p(k.kind, algo) ? 100u : 1000u, DType::kFloat32, ReduceOp::SUM,
                              root, false});
      const bool big = p == 2 || p == 3 || p == 5 || p == 8;
      if (big && !(p > 5 && grows_with_p(k.kind, algo)))
        check_call(world, Call{k.kind, algo, 1000003, DType::kFloat32, ReduceOp::SUM, root, false});
    }
  if (p > 7) return;
  for (const KindAlgos& k : kEvery) {
    if (!collectives::has_op(k.kind)) continue;
    for (Algo algo : k.algos)
      for (DType dtype : collectives::kAllDTypes)
        for (ReduceOp op : collectives::kAllReduceOps) check_call(world, Call{k.kind, algo, 7, dtype, op, root, true});
  }
}

}  // namespace

TEST_CASE("simulated ranks equal the serial reference at p = 2-9", "[sim]") {
  for (int p = 2; p <= 9; ++p) every_collective(p);
}
TEST_CASE("simulated ranks equal the serial reference at p = 2-9 on ucontext fibers", "[sim]") {
  for (int p = 2; p <= 9; ++p) every_collective(p, FiberSwitch::kUcontext);
}
TEST_CASE("simulated ranks equal the serial reference at p = 16", "[sim]") { every_collective(16); }
TEST_CASE("simulated ranks equal the serial reference at p = 63", "[sim]") { every_collective(63); }
TEST_CASE("simulated ranks equal the serial reference at p = 64", "[sim]") { every_collective(64); }
TEST_CASE("simulated ranks equal the serial reference at p = 100", "[sim]") { every_collective(100); }
TEST_CASE("simulated ranks equal the serial reference at p = 256", "[sim]") { every_collective(256); }

}  // namespace ringgrad::test
