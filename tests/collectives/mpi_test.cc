// The MPI backend against the serial reference: every collective x dtype x op x count
// {0, 1, 7, 1000003} x in/out of place, plus all_to_all_v and a batched ring exchange, with
// RINGGRAD_BACKEND=mpi; and a split (MPI_Comm_split) whose group runs the all-reduce cases
// while the world all-reduces from another thread.
// Started by mpirun with no other environment (CTest runs `mpirun -np 3`,
// tests/collectives/CMakeLists.txt): the job finds rank 0's store through MPI
// (collectives/backends/mpi_bootstrap.h). Prints "skipped: <why>" and exits 0 where ringgrad
// was built without MPI.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "tests/collectives/cases.h"
#include "tests/support/multiprocess.h"

using ringgrad::collectives::Algo;
using ringgrad::collectives::CollKind;

int main() {
  if (!RINGGRAD_HAVE_MPI) {
    std::puts("skipped: ringgrad was built without MPI (install libopenmpi-dev and rebuild)");
    return 0;
  }
  try {
    ringgrad::collectives::CommOptions options = ringgrad::collectives::CommOptions::from_env();
    options.backend = ringgrad::collectives::Backend::kMpi;
    ringgrad::collectives::Communicator comm(ringgrad::transport::Config::from_env(), options);
    const std::vector<Algo> automatic = {Algo::kAuto};
    int kinds = 0;
    for (CollKind kind : {CollKind::kAllReduce, CollKind::kReduce, CollKind::kBroadcast, CollKind::kAllGather,
                          CollKind::kReduceScatter, CollKind::kGather, CollKind::kScatter, CollKind::kAllToAll}) {
      ringgrad::test::run_cases(comm, kind, automatic, false);  // MPI has no 16-bit float reductions
      ++kinds;
    }
    for (auto dtype : {ringgrad::collectives::DType::kFloat32, ringgrad::collectives::DType::kInt64})
      ringgrad::test::run_all_to_all_v(comm, dtype, 1000);  // MPI_Alltoallv
    ++kinds;
    // A ring exchange both ways as one batch (MPI_Irecv, MPI_Isend, MPI_Waitall).
    const int p = comm.world_size(), r = comm.rank(), right = (r + 1) % p, left = (r + p - 1) % p;
    std::vector<int32_t> out(100000, r), from_left(out.size(), -1), from_right(out.size(), -1);
    using ringgrad::collectives::Buffer;
    using ringgrad::collectives::P2POp;
    const auto n = out.size();
    comm.batch_send_recv({P2POp::send(Buffer{out.data(), n, ringgrad::collectives::DType::kInt32}, right),
                          P2POp::send(Buffer{out.data(), n, ringgrad::collectives::DType::kInt32}, left),
                          P2POp::recv(Buffer{from_left.data(), n, ringgrad::collectives::DType::kInt32}, left),
                          P2POp::recv(Buffer{from_right.data(), n, ringgrad::collectives::DType::kInt32}, right)});
    ringgrad::test::check(from_left.back() == left && from_right.front() == right,
                          fmt::format("rank {}: batch got {} from the left, {} from the right", r, from_left.back(),
                                      from_right.front()));
    ++kinds;
    // Ranks 0 and 1 in reverse order (key -rank); rank 2 in none.
    auto group = comm.split(r == 2 ? -1 : 0, -r, "pair");
    ringgrad::test::check((r == 2) == (group == nullptr) && (!group || group->rank() == 1 - r),
                          fmt::format("rank {}: split gave {}", r, group ? group->rank() : -1));
    int64_t total = r;
    std::thread world_thread([&] {
      comm.all_reduce(ringgrad::collectives::ConstBuffer(&total, 1, ringgrad::collectives::DType::kInt64),
                      ringgrad::collectives::Buffer(&total, 1, ringgrad::collectives::DType::kInt64),
                      ringgrad::collectives::ReduceOp::SUM);
    });
    if (group) ringgrad::test::run_cases(*group, CollKind::kAllReduce, automatic, false);
    world_thread.join();
    ringgrad::test::check(total == p * (p - 1) / 2, fmt::format("rank {}: world sum {}", r, total));
    ++kinds;
    comm.barrier();
    if (comm.rank() == 0) fmt::print("{} passed, 0 failed\n", kinds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_test: %s\n", e.what());
    return 1;
  }
}
