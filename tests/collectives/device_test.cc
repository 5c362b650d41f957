// Device collectives against the serial reference: every collective and algorithm, float,
// half, bfloat16 and int32, in and out of place, world sizes 2-4, backends ringgrad (ranks may
// share a GPU: CUDA IPC) and nccl (one GPU per rank); the groups of a split world (their device
// calls staged through host memory); a rank killed mid-collective makes the others throw. Without a visible GPU each case says so (WARN) and passes without running.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/device_check.h"
#include "collectives/reference.h"
#include "tests/support/multiprocess.h"
#include "tests/support/require_all_ok.h"
#if RINGGRAD_HAVE_CUDA
#include "transport/cuda_ipc.h"
#endif

namespace ringgrad::test {
namespace {

using collectives::Algo;
using collectives::Backend;
using collectives::Buffer;
using collectives::CollKind;
using collectives::Communicator;
using collectives::DType;
using collectives::ReduceOp;
using namespace collectives::reference;  // inputs and serial results to compare with

// GPUs a fresh process sees, asked in a child: CUDA must not be initialised in this process
// before run_ranks forks (a forked child cannot use its parent's CUDA context).
int visible_gpus() {
  static const int count = [] {
    int fds[2];
    if (::pipe(fds) != 0) return 0;
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int n = collectives::cuda_device_count();
      _exit(::write(fds[1], &n, sizeof n) == sizeof n ? 0 : 1);
    }
    ::close(fds[1]);
    int n = 0;
    if (::read(fds[0], &n, sizeof n) != sizeof n) n = 0;
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    return n;
  }();
  return count;
}

// True when the case can run; otherwise says why in the test output.
bool gpus_for(Backend backend, int world_size) {
  const int n = visible_gpus();
  if (n == 0) {
    WARN("skipped: no GPU visible (cudaGetDeviceCount failed or returned 0)");
    return false;
  }
  if (backend == Backend::kNccl && !RINGGRAD_HAVE_NCCL) {
    WARN("skipped: built without NCCL");
    return false;
  }
  if (backend == Backend::kNccl && n < world_size) {
    WARN(fmt::format("skipped: NCCL needs one GPU per rank, {} ranks but {} GPU(s)", world_size, n));
    return false;
  }
  return true;
}

#if RINGGRAD_HAVE_CUDA

using transport::cuda_check;

// New device memory of `bytes` (at least 1) filled with 0xAB, then `host` copied to its start.
// Synchronised before it is returned, as the communicator's contract asks of callers: the
// memset runs on the default stream, which the communicator's own stream does not wait for,
// and a copy from pageable memory may return before it lands (without the wait, the first GPU
// run most likely saw a late memset overwrite an out-of-place result).
transport::DeviceMemory to_device(const std::vector<std::byte>& host, std::size_t bytes) {
  transport::DeviceMemory d(std::max<std::size_t>(bytes, 1));
  cuda_check(cudaMemset(d.get(), 0xAB, bytes), "cudaMemset");
  if (!host.empty()) cuda_check(cudaMemcpy(d.get(), host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return d;
}

std::vector<std::byte> to_host(const std::byte* d, std::size_t bytes) {
  std::vector<std::byte> h(bytes);
  if (bytes > 0) cuda_check(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

struct Case {
  CollKind kind;
  Algo algo;
  DType dtype;
  ReduceOp op;
  std::size_t count;  // NCCL's count
  bool in_place;
  int root;
};

void run_case(Communicator& comm, const Case& c, int device) {
  const int p = comm.world_size(), r = comm.rank();
  const std::size_t es = collectives::dtype_size(c.dtype), n = c.count, P = static_cast<std::size_t>(p);
  const std::string name = fmt::format("rank {}: {} algo={} dtype={} op={} count={} {} root={}", r,
                                       collectives::coll_name(c.kind), collectives::algo_name(c.algo),
                                       collectives::dtype_name(c.dtype), collectives::reduce_op_name(c.op), n,
                                       c.in_place ? "in-place" : "out-of-place", c.root);
  auto dbuf = [&](const transport::DeviceMemory& m, std::size_t offset, std::size_t count) {
    return Buffer{m.get() + offset * es, count, c.dtype, 1, device};
  };
  std::vector<std::byte> got, want;
  switch (c.kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduce: {
      auto in = to_device(make_input(r, n, c.op, c.dtype), n * es), out = to_device({}, n * es);
      const auto& result = c.in_place ? in : out;
      if (c.kind == CollKind::kAllReduce) comm.all_reduce(dbuf(in, 0, n), dbuf(result, 0, n), c.op, c.algo);
      else comm.reduce(dbuf(in, 0, n), dbuf(result, 0, n), c.op, c.root, c.algo);
      if (c.kind == CollKind::kReduce && r != c.root) return;
      got = to_host(result.get(), n * es);
      want = expected_reduction(p, 0, n, c.op, c.dtype);
      break;
    }
    case CollKind::kBroadcast: {
      want = make_input(c.root, n, c.op, c.dtype);
      auto in = to_device(r == c.root ? want : std::vector<std::byte>{}, n * es);
      auto out = c.in_place ? std::move(in) : to_device({}, n * es);
      comm.broadcast(dbuf(c.in_place ? out : in, 0, n), dbuf(out, 0, n), c.root, c.algo);
      got = to_host(out.get(), n * es);
      break;
    }
    case CollKind::kAllGather: {
      want = expected_output(c.kind, p, r, n, c.op, c.dtype, c.root);
      const auto mine = make_input(r, n, c.op, c.dtype, static_cast<std::size_t>(r) * n);
      auto out = to_device({}, n * P * es), in = to_device(mine, n * es);
      if (c.in_place && n > 0) {
        cuda_check(cudaMemcpy(out.get() + static_cast<std::size_t>(r) * n * es, mine.data(), n * es, cudaMemcpyHostToDevice), "cudaMemcpy");
        // From pageable memory, the copy may return before it lands: see to_device.
        cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      }
      comm.all_gather(c.in_place ? dbuf(out, static_cast<std::size_t>(r) * n, n) : dbuf(in, 0, n), dbuf(out, 0, n * P), c.algo);
      got = to_host(out.get(), n * P * es);
      break;
    }
    default: {  // reduce_scatter
      const std::size_t mine = static_cast<std::size_t>(r) * n;
      auto in = to_device(make_input(r, n * P, c.op, c.dtype), n * P * es), out = to_device({}, n * es);
      comm.reduce_scatter(dbuf(in, 0, n * P), c.in_place ? dbuf(in, mine, n) : dbuf(out, 0, n), c.op, c.algo);
      got = to_host(c.in_place ? in.get() + mine * es : out.get(), n * es);
      want = expected_reduction(p, mine, n, c.op, c.dtype);
      break;
    }
  }
  const long i = first_difference(got.data(), want.data(), want.size() / es, c.dtype);
  check(i < 0, fmt::format("{}: element {} differs from the serial reference", name, i));
}

collectives::CommOptions options_for(Backend backend) {
  collectives::CommOptions o;
  o.backend = backend;
  o.device_chunk_bytes = 64 << 10;  // many pieces per call: the inbox slots wrap around
  return o;
}

void sweep(Backend backend, int p) {
  if (!gpus_for(backend, p)) return;
  RunOptions options;
  options.deadline = std::chrono::seconds(170);
  require_all_ok(run_ranks(p, [&](const transport::Config& config) {
    const int device = config.rank % collectives::cuda_device_count();
    Communicator comm(config, options_for(backend));
    int index = 0;
    for (CollKind kind : {CollKind::kAllReduce, CollKind::kReduce, CollKind::kBroadcast, CollKind::kAllGather,
                          CollKind::kReduceScatter}) {
      const bool reduces = kind != CollKind::kBroadcast && kind != CollKind::kAllGather;
      const bool per_rank = kind == CollKind::kAllGather || kind == CollKind::kReduceScatter;
      for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kHalvingDoubling}) {
        if (!collectives::has_algo(kind, algo) || (backend == Backend::kNccl && algo != Algo::kRing)) continue;
        for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32})
          for (ReduceOp op : {ReduceOp::SUM, ReduceOp::MAX, ReduceOp::AVG, ReduceOp::PRODUCT}) {
            if (!reduces && op != ReduceOp::SUM) continue;
            for (std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{300007}})
              for (bool in_place : {false, true}) {
                const std::size_t n = per_rank && count > 7 ? count / static_cast<std::size_t>(p) : count;
                run_case(comm, Case{kind, algo, dtype, op, n, in_place, index++ % p}, device);
              }
          }
      }
    }
    // Point to point around the ring on device memory, as one batch: a device send returns
    // only once the peer's receive has taken it, so a send_async then a recv would deadlock.
    auto out = to_device(make_input(comm.rank(), 1000, ReduceOp::SUM, DType::kFloat32), 4000), in = to_device({}, 4000);
    comm.batch_send_recv({collectives::P2POp::send(Buffer{out.get(), 1000, DType::kFloat32, 1, device}, (comm.rank() + 1) % p),
                          collectives::P2POp::recv(Buffer{in.get(), 1000, DType::kFloat32, 1, device}, (comm.rank() + p - 1) % p)},
                         3);
    const auto want = make_input((comm.rank() + p - 1) % p, 1000, ReduceOp::SUM, DType::kFloat32);
    check(to_host(in.get(), 4000) == want, "send/recv on device memory");
  }, options));
}

// The groups of a split world (a grid's tensor- and data-parallel groups: ranks {0, 2} and
// {1, 3}) on device memory: their calls go through host memory (collectives/host_staging.h)
// and give the serial reference's results, in and out of place, and so does a batch of a send
// and a receive inside a group.
void group_sweep() {
  if (!gpus_for(Backend::kRinggrad, 4)) return;
  RunOptions options;
  options.deadline = std::chrono::seconds(170);
  require_all_ok(run_ranks(4, [&](const transport::Config& config) {
    const int device = config.rank % collectives::cuda_device_count();
    Communicator world(config, options_for(Backend::kRinggrad));
    const std::unique_ptr<Communicator> group = world.split(world.rank() % 2, world.rank(), "odd-even");
    Communicator& comm = *group;
    const int p = comm.world_size();
    int index = 0;
    for (CollKind kind : {CollKind::kAllReduce, CollKind::kReduce, CollKind::kBroadcast, CollKind::kAllGather,
                          CollKind::kReduceScatter})
      for (DType dtype : {DType::kFloat32, DType::kBFloat16})
        for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG})
          for (std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{300007}})
            for (bool in_place : {false, true}) {
              if ((kind == CollKind::kBroadcast || kind == CollKind::kAllGather) && op != ReduceOp::SUM) continue;
              run_case(comm, Case{kind, Algo::kRing, dtype, op, count, in_place, index++ % p}, device);
            }
    auto out = to_device(make_input(comm.rank(), 1000, ReduceOp::SUM, DType::kFloat32), 4000), in = to_device({}, 4000);
    const int peer = 1 - comm.rank();
    comm.batch_send_recv({collectives::P2POp::send(Buffer{out.get(), 1000, DType::kFloat32, 1, device}, peer),
                          collectives::P2POp::recv(Buffer{in.get(), 1000, DType::kFloat32, 1, device}, peer)},
                         3);
    check(to_host(in.get(), 4000) == make_input(peer, 1000, ReduceOp::SUM, DType::kFloat32),
          "send/recv on device memory inside a group");
  }, options));
}

void killed_rank(Backend backend) {
  if (!gpus_for(backend, 3)) return;
  RunOptions options;
  options.timeout = std::chrono::seconds(10);
  const auto results = run_ranks(3, [&](const transport::Config& config) {
    const int device = config.rank % collectives::cuda_device_count();
    Communicator comm(config, options_for(backend));
    auto x = to_device(make_input(comm.rank(), 16 << 20, ReduceOp::MAX, DType::kFloat32), 64 << 20);
    const Buffer b{x.get(), 16 << 20, DType::kFloat32, 1, device};
    comm.all_reduce(b, b, ReduceOp::MAX);  // sets up IPC or NCCL before the kill
    std::thread killer;
    if (comm.rank() == 2)
      killer = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        ::kill(::getpid(), SIGKILL);
      });
    const auto t0 = std::chrono::steady_clock::now();
    try {
      for (int i = 0; i < 1000; ++i) comm.all_reduce(b, b, ReduceOp::MAX);
    } catch (const transport::TransportError& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      check(s < 15.0, fmt::format("threw after {:.1f} s, past the 10 s timeout: {}", s, e.what()));
      _exit(0);  // device memory is leaked on purpose after a failure: skip the teardown
    }
    check(false, "no error although rank 2 died");
  }, options);
  INFO(describe(results));
  CHECK(results[0].ok());
  CHECK(results[1].ok());
  CHECK(results[2].signal == SIGKILL);
}

#else

void sweep(Backend backend, int p) { static_cast<void>(gpus_for(backend, p)); }
void killed_rank(Backend backend) { static_cast<void>(gpus_for(backend, 3)); }
void group_sweep() { static_cast<void>(gpus_for(Backend::kRinggrad, 4)); }

#endif

}  // namespace

TEST_CASE("device collectives, backend ringgrad, world size 2", "[collectives][device]") { sweep(Backend::kRinggrad, 2); }
TEST_CASE("device collectives, backend ringgrad, world size 3", "[collectives][device]") { sweep(Backend::kRinggrad, 3); }
TEST_CASE("device collectives, backend ringgrad, world size 4", "[collectives][device]") { sweep(Backend::kRinggrad, 4); }
TEST_CASE("device collectives, backend nccl, world size 2", "[collectives][device]") { sweep(Backend::kNccl, 2); }
TEST_CASE("device collectives, backend nccl, world size 3", "[collectives][device]") { sweep(Backend::kNccl, 3); }
TEST_CASE("device collectives, backend nccl, world size 4", "[collectives][device]") { sweep(Backend::kNccl, 4); }
TEST_CASE("device collectives in the groups of a split world of 4 (through host memory)", "[collectives][device]") {
  group_sweep();
}
TEST_CASE("a rank killed during a device all_reduce ends the others with an error, backend ringgrad",
          "[collectives][device]") { killed_rank(Backend::kRinggrad); }
TEST_CASE("a rank killed during a device all_reduce ends the others with an error, backend nccl",
          "[collectives][device]") { killed_rank(Backend::kNccl); }

// Runs everywhere: where no GPU can serve a device buffer, every rank gets a named error.
TEST_CASE("a device buffer no GPU can serve is refused with a named error", "[collectives][device]") {
  if (visible_gpus() > 0) {
    WARN("skipped: a GPU is visible, so device buffers are served");
    return;
  }
  require_all_ok(run_ranks(2, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    std::vector<float> host(8, 1.0f);
    const Buffer fake{host.data(), 8, DType::kFloat32, 1, 0};
    try {
      comm.all_reduce(fake, fake, ReduceOp::SUM);
    } catch (const collectives::CollectiveError& e) {
      const std::string m = e.what();
      check(m.find("invalid arguments on rank 0") != std::string::npos && m.find("cuda:0") != std::string::npos, m);
      comm.all_reduce(Buffer{host.data(), 8, DType::kFloat32}, Buffer{host.data(), 8, DType::kFloat32}, ReduceOp::SUM);
      check(host[0] == 2.0f, "host all_reduce after the refused device call");
      return;
    }
    check(false, "a device buffer without a GPU did not throw CollectiveError");
  }));
}

}  // namespace ringgrad::test
