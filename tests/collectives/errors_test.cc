// Ranks that disagree (count, dtype, op, root, collective) or pass unusable buffers get a
// CollectiveError on every rank naming the ranks and values, and the communicator stays usable;
// a rank killed during a 64 MiB all_reduce makes every survivor throw within the timeout, over
// shared memory (by the fast and by the plain link) and over TCP, as does a silent rank over
// shared memory, and a rank that fails after finishing a collective leaves the ranks behind to
// finish it; ranks that disagree on the check itself, or on the shared-memory link, hear so.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/algorithms/piggyback.h"
#include "collectives/check.h"
#include "collectives/communicator.h"
#include "collectives/flight_recorder.h"
#include "collectives/links/shm_link.h"
#include "collectives/links/shm_peers.h"
#include "transport/cpus.h"
#include "transport/transport.h"
#include "tests/support/multiprocess.h"
#include "tests/support/require_all_ok.h"

namespace ringgrad::test {
namespace {

using collectives::Algo;
using collectives::Buffer;
using collectives::CollectiveError;
using collectives::Communicator;
using collectives::DType;
using collectives::ReduceOp;
using collectives::Work;
using collectives::ShmLinkKind;

// Runs call; it must throw CollectiveError whose message contains every one of `parts`.
template <typename F>
void expect_error(const char* what, F call, const std::vector<std::string>& parts) {
  try {
    call();
  } catch (const CollectiveError& e) {
    for (const auto& part : parts)
      check(std::string(e.what()).find(part) != std::string::npos,
            fmt::format("{}: message '{}' lacks '{}'", what, e.what(), part));
    return;
  }
  check(false, fmt::format("{}: no CollectiveError", what));
}

}  // namespace

TEST_CASE("disagreeing ranks get the same named error on every rank", "[collectives]") {
  require_all_ok(run_ranks(3, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    const int r = comm.rank();
    std::vector<float> f(12, 1.0f);
    std::vector<double> d(12, 1.0);

    const std::size_t n = r == 1 ? 11 : 10;
    expect_error("count", [&] { comm.all_reduce(Buffer{f.data(), n, DType::kFloat32}, Buffer{f.data(), n, DType::kFloat32}, ReduceOp::SUM); },
                 {"all_reduce #0", "ranks disagree on count: 10 on ranks 0, 2; 11 on rank 1"});
    Buffer mixed = r == 2 ? Buffer{d.data(), 4, DType::kFloat64} : Buffer{f.data(), 4, DType::kFloat32};
    expect_error("dtype", [&] { comm.all_reduce(mixed, mixed, ReduceOp::SUM); },
                 {"dtype: double on rank 2; float on ranks 0, 1"});
    expect_error("op", [&] { comm.all_reduce(Buffer{f.data(), 4, DType::kFloat32}, Buffer{f.data(), 4, DType::kFloat32}, r == 0 ? ReduceOp::MAX : ReduceOp::SUM); },
                 {"op: max on rank 0; sum on ranks 1, 2"});
    expect_error("root", [&] { comm.broadcast(Buffer{f.data(), 4, DType::kFloat32}, Buffer{f.data(), 4, DType::kFloat32}, r == 2 ? 1 : 0); },
                 {"broadcast #3", "root: 0 on ranks 0, 1; 1 on rank 2"});
    expect_error("reduce root", [&] { comm.reduce(Buffer{f.data(), 4, DType::kFloat32}, Buffer{f.data(), 4, DType::kFloat32}, ReduceOp::SUM, r, Algo::kTree); },
                 {"root: 0 on rank 0; 1 on rank 1; 2 on rank 2"});
    auto collective = [&] {
      if (r == 0) comm.barrier();
      else comm.all_reduce(Buffer{f.data(), 4, DType::kFloat32}, Buffer{f.data(), 4, DType::kFloat32}, ReduceOp::SUM);
    };
    expect_error("collective", collective, {"the collective: all_reduce #5 on ranks 1, 2; barrier #5 on rank 0"});
    Buffer strided{f.data(), 6, DType::kFloat32, r == 1 ? 2 : 1};
    expect_error("stride", [&] { comm.all_reduce(strided, strided, ReduceOp::SUM); },
                 {"invalid arguments on rank 1", "not contiguous (stride 2 elements)"});
    expect_error("root out of range", [&] { comm.broadcast(Buffer{f.data(), 4, DType::kFloat32}, Buffer{f.data(), 4, DType::kFloat32}, 3); },
                 {"invalid arguments on rank 0", "root 3 is not a rank of this world of 3"});
    expect_error("all_gather sizes", [&] { comm.all_gather(Buffer{f.data(), 4, DType::kFloat32}, Buffer{d.data(), 11, DType::kFloat32}); },
                 {"invalid arguments on rank 0", "recv holds 11 elements, all_gather needs send count 4 x world size 3 = 12"});
    expect_error("missing algorithm", [&] { comm.all_gather(Buffer{f.data(), 4, DType::kFloat32}, Buffer{d.data(), 12, DType::kFloat32}, Algo::kTree); },
                 {"all_gather has no 'tree' algorithm (it has: ring)"});
    expect_error("all_to_all count", [&] { comm.all_to_all(Buffer{f.data(), 10, DType::kFloat32}, Buffer{d.data(), 10, DType::kFloat32}); },
                 {"all_to_all #10", "invalid arguments on rank 0", "send holds 10 elements, not a multiple of the world size 3"});
    expect_error("gather at the root", [&] { comm.gather(Buffer{f.data(), 4, DType::kFloat32}, Buffer{d.data(), r == 2 ? 11u : 0u, DType::kFloat32}, 2); },
                 {"invalid arguments on rank 2", "recv holds 11 elements, gather needs send count 4 x world size 3 = 12"});
    expect_error("scatter algorithm", [&] { comm.scatter(Buffer{f.data(), 12, DType::kFloat32}, Buffer{d.data(), 4, DType::kFloat32}, 0, Algo::kRing); },
                 {"scatter has no 'ring' algorithm (it has: linear)"});
    // 4 floats ride in the check's header (a one-shot all-reduce), 1000 do not: the headers
    // are alike in size all the same, so the disagreement is still named.
    std::vector<float> big(1000, 1.0f);
    const std::size_t m = r == 1 ? 1000 : 4;
    expect_error("count, one vector in the descriptor", [&] { comm.all_reduce(Buffer{big.data(), m, DType::kFloat32}, Buffer{big.data(), m, DType::kFloat32}, ReduceOp::SUM); },
                 {"all_reduce #13", "ranks disagree on count: 1000 on rank 1; 4 on ranks 0, 2"});
    // 2^61 + 1 doubles: 8 times that wraps to 8 bytes, which must not pass for a small call.
    const std::size_t wraps = (std::size_t{1} << 61) + 1;
    expect_error("a count whose bytes wrap", [&] { comm.broadcast(Buffer{d.data(), wraps, DType::kFloat64}, Buffer{d.data(), wraps, DType::kFloat64}, 0); },
                 {"broadcast #14", "invalid arguments on rank 0", "send holds 2305843009213693953 elements of double: more than"});
    // Nothing moved: the communicator still works, and sequence numbers still agree.
    std::vector<float> x(7, static_cast<float>(r + 1));
    comm.all_reduce(Buffer{x.data(), 7, DType::kFloat32}, Buffer{x.data(), 7, DType::kFloat32}, ReduceOp::SUM);
    check(x[6] == 6.0f, fmt::format("all_reduce after errors gave {}", x[6]));
  }));
}

TEST_CASE("errors of asynchronous collectives are rethrown by wait()", "[collectives]") {
  require_all_ok(run_ranks(2, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    std::vector<int64_t> a(1000, comm.rank() + 1), b(5, 1);
    auto ok = comm.all_reduce_async(Buffer{a.data(), 1000, DType::kInt64}, Buffer{a.data(), 1000, DType::kInt64}, ReduceOp::PRODUCT);
    auto bad = comm.all_reduce_async(Buffer{b.data(), comm.rank() == 0 ? 5u : 4u, DType::kInt64},
                                     Buffer{b.data(), comm.rank() == 0 ? 5u : 4u, DType::kInt64}, ReduceOp::SUM);
    ok.wait();
    check(a[999] == 2, "async product");
    expect_error("async count", [&] { bad.wait(); }, {"count: 4 on rank 1; 5 on rank 0"});
  }));
}

TEST_CASE("asynchronous collectives run in issue order while the caller computes", "[collectives]") {
  require_all_ok(run_ranks(3, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    const int r = comm.rank();
    std::vector<std::vector<double>> grads(8, std::vector<double>(50000));
    std::vector<collectives::Work> works;
    for (std::size_t b = 0; b < grads.size(); ++b) {
      std::fill(grads[b].begin(), grads[b].end(), static_cast<double>(r + 1) * static_cast<double>(b + 1));
      Buffer g{grads[b].data(), grads[b].size(), DType::kFloat64};
      works.push_back(comm.all_reduce_async(g, g, ReduceOp::AVG));
    }
    volatile double sink = 0;  // "backward" of the next layer while buckets reduce
    for (int i = 0; i < 2000000; ++i) sink = sink + i * 1e-9;
    for (std::size_t b = 0; b < grads.size(); ++b) {
      works[b].wait();
      check(grads[b][123] == 2.0 * static_cast<double>(b + 1), fmt::format("bucket {}: {}", b, grads[b][123]));
    }
    // Point to point around the ring, asynchronous then blocking.
    std::vector<int32_t> out(33, r), in(33, -1);
    auto s = comm.send_async(Buffer{out.data(), 33, DType::kInt32}, (r + 1) % 3, 7);
    comm.recv(Buffer{in.data(), 33, DType::kInt32}, (r + 2) % 3, 7);
    s.wait();
    check(in[32] == (r + 2) % 3, "send/recv ring");
    comm.barrier();
  }));
}

TEST_CASE("Work::then runs once per call, with its error, before wait returns", "[collectives]") {
  require_all_ok(run_ranks(2, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    std::vector<int64_t> a(1000, comm.rank() + 1), b(5, 1);
    std::atomic<int> calls{0};
    std::exception_ptr seen = std::make_exception_ptr(std::runtime_error("not called"));
    // Registered while the call may still run: called on the worker, before wait() returns.
    Work ok = comm.all_reduce_async(Buffer{a.data(), a.size(), DType::kInt64}, Buffer{a.data(), a.size(), DType::kInt64},
                                    ReduceOp::SUM);
    ok.then([&](std::exception_ptr error) {
      seen = error;
      check(a[999] == 3, "the data is in place when the callback runs");
      ++calls;
    });
    ok.wait();
    check(calls == 1 && !seen, "one callback, no error");
    // Registered after the call ended: called at once, on this thread.
    ok.then([&](std::exception_ptr error) { calls += error ? 100 : 1; });
    check(calls == 2, "a late callback runs at once");
    // A refused call hands its error to the callback and to wait().
    Work bad = comm.all_reduce_async(Buffer{b.data(), comm.rank() == 0 ? 5u : 4u, DType::kInt64},
                                     Buffer{b.data(), comm.rank() == 0 ? 5u : 4u, DType::kInt64}, ReduceOp::SUM);
    std::string message;
    bad.then([&](std::exception_ptr error) {
      try {
        if (error) std::rethrow_exception(error);
      } catch (const std::exception& e) {
        message = e.what();
      }
    });
    expect_error("callback's count", [&] { bad.wait(); }, {"count: 4 on rank 1; 5 on rank 0"});
    check(message.find("count: 4 on rank 1; 5 on rank 0") != std::string::npos, "callback error: " + message);
  }));
}

namespace {

void kill_a_rank_during_all_reduce(bool shared_memory, ShmLinkKind link) {
  RunOptions options;
  options.timeout = std::chrono::seconds(10);
  const auto results = run_ranks(3, [&](const transport::Config& config) {
    collectives::CommOptions comm_options;
    comm_options.shared_memory = shared_memory;
    comm_options.shm_link = link;
    Communicator comm(config, comm_options);
    std::vector<float> x(16 << 20, 1.0f);
    comm.barrier();
    std::thread killer;
    if (comm.rank() == 2)
      killer = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        ::kill(::getpid(), SIGKILL);
      });
    const auto t0 = std::chrono::steady_clock::now();
    try {
      for (int i = 0; i < 100; ++i)
        comm.all_reduce(Buffer{x.data(), x.size(), DType::kFloat32}, Buffer{x.data(), x.size(), DType::kFloat32}, ReduceOp::SUM);
    } catch (const transport::TransportError& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      check(s < 10.0, fmt::format("threw after {:.1f} s, past the 10 s timeout: {}", s, e.what()));
      const std::string what = e.what();  // the collective in words, never a raw tag
      check(what.find("all_reduce #") != std::string::npos && what.find("tag ") == std::string::npos, what);
      // Later calls fail at once, naming the first error.
      try {
        comm.barrier();
      } catch (const transport::TransportError& later) {
        check(std::string(later.what()).find("broken") != std::string::npos, later.what());
        return;
      }
      check(false, "barrier on a broken communicator did not throw");
    }
    check(false, "no error although rank 2 died");
  }, options);
  INFO(describe(results));
  CHECK(results[0].ok());
  CHECK(results[1].ok());
  CHECK(results[2].signal == SIGKILL);
}

}  // namespace

TEST_CASE("a rank killed during a 64 MiB all_reduce makes every survivor throw within the timeout", "[collectives]") {
  SECTION("over shared memory") { kill_a_rank_during_all_reduce(true, ShmLinkKind::kFast); }
  SECTION("over shared memory, the plain link") { kill_a_rank_during_all_reduce(true, ShmLinkKind::kPlain); }
  SECTION("over TCP") { kill_a_rank_during_all_reduce(false, ShmLinkKind::kFast); }
}

namespace {

// Broadcast #1 runs along the chain 0 -> 1 -> 2 -> 3 with rank 3 already dead: rank 0 hands its
// piece to rank 1 and is done, while rank 1 sleeps and rank 2 waits for it. Rank 0's all-reduce
// #2 then fails on dead rank 3 and aborts (over shared memory it marks every doorbell: rank 0
// runs nothing from #2 on). Rank 2 must still get #1's value, then fail #2.
void fail_after_finishing_a_collective(bool shared_memory, ShmLinkKind link) {
  RunOptions options;
  options.timeout = std::chrono::seconds(20);
  const auto results = run_ranks(4, [&](const transport::Config& config) {
    collectives::CommOptions comm_options;
    comm_options.shared_memory = shared_memory;
    comm_options.shm_link = link;
    comm_options.check_args = false;  // no check exchange: rank 0 leaves #1 once its piece is out
    Communicator comm(config, comm_options);
    comm.barrier();  // #0 sets up shared memory
    check(comm.host_path().starts_with(shared_memory ? "shared memory" : "TCP"), comm.host_path());
    const int r = comm.rank();
    if (r == 3) ::_exit(3);
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    float v = r == 0 ? 42.0f : 0.0f;
    comm.broadcast(Buffer{&v, 1, DType::kFloat32}, Buffer{&v, 1, DType::kFloat32}, 0, Algo::kRing);
    check(v == 42.0f, fmt::format("rank {}: broadcast #1 gave {}", r, v));
    try {
      comm.all_reduce(Buffer{&v, 1, DType::kFloat32}, Buffer{&v, 1, DType::kFloat32}, ReduceOp::SUM, Algo::kRing);
      check(false, fmt::format("rank {}: all_reduce #2 returned although rank 3 is dead", r));
    } catch (const transport::TransportError& e) {
      const std::string what = e.what();
      check(what.find("all_reduce #2") != std::string::npos, what);
      // The runner names the call and the rank; the transport's own "rank r: " is not repeated.
      const std::string mine = fmt::format("rank {}: ", r);
      check(what.find(mine) == what.rfind(mine), fmt::format("rank {} named twice: {}", r, what));
    }
  }, options);
  INFO(describe(results));
  for (const auto& res : results) CHECK((res.rank == 3 ? res.exit_code == 3 : res.ok()));
}

}  // namespace

TEST_CASE("a rank that fails after it finished a collective lets the ranks behind finish that one", "[collectives]") {
  SECTION("over shared memory") { fail_after_finishing_a_collective(true, ShmLinkKind::kFast); }
  SECTION("over shared memory, the plain link") { fail_after_finishing_a_collective(true, ShmLinkKind::kPlain); }
  SECTION("over TCP") { fail_after_finishing_a_collective(false, ShmLinkKind::kFast); }
}

namespace {

// Rank 2 of 3 sets up shared memory, then stays silent (alive, its connections open) past the
// others' 1.5 s timeout. The first to time out aborts, which wakes the other: both must throw
// within the timeout and a little, naming the collective.
void silent_rank_over_shared_memory(ShmLinkKind link) {
  RunOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  const auto results = run_ranks(3, [&](const transport::Config& config) {
    collectives::CommOptions comm_options;
    comm_options.shm_link = link;
    Communicator comm(config, comm_options);
    comm.barrier();  // #0 sets up shared memory
    check(comm.host_path().starts_with("shared memory"), comm.host_path());
    if (comm.rank() == 2) {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      ::_exit(0);
    }
    std::vector<float> x(1000, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      comm.all_reduce(Buffer{x.data(), x.size(), DType::kFloat32}, Buffer{x.data(), x.size(), DType::kFloat32}, ReduceOp::SUM);
    } catch (const transport::TransportError& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      check(s < 3.0, fmt::format("rank {}: threw after {:.1f} s, past the 1.5 s timeout: {}", comm.rank(), s, e.what()));
      const std::string what = e.what();
      check(what.find("all_reduce #1") != std::string::npos &&
                (what.find("no progress over shared memory") != std::string::npos || what.find("failed") != std::string::npos),
            what);
      return;
    }
    check(false, fmt::format("rank {}: no error although rank 2 is silent", comm.rank()));
  }, options);
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

TEST_CASE("a silent rank makes the others throw within the timeout over shared memory", "[collectives]") {
  SECTION("the fast link") { silent_rank_over_shared_memory(ShmLinkKind::kFast); }
  SECTION("the plain link") { silent_rank_over_shared_memory(ShmLinkKind::kPlain); }
}

TEST_CASE("ranks that disagree on the shared-memory link get the named error as they set it up", "[collectives]") {
  require_all_ok(run_ranks(2, [&](const transport::Config& config) {
    collectives::CommOptions options;
    options.shm_link = config.rank == 1 ? ShmLinkKind::kPlain : ShmLinkKind::kFast;
    Communicator comm(config, options);
    try {
      comm.barrier();
    } catch (const transport::TransportError& e) {
      const std::string want = config.rank == 1 ? "rank 1: the plain shared-memory link but rank 0 uses the fast one"
                                                : "rank 0: the fast shared-memory link but rank 1 uses the plain one";
      check(std::string(e.what()).find(want) != std::string::npos && std::string(e.what()).find("RINGGRAD_SHM_LINK") != std::string::npos,
            e.what());
      return;
    }
    check(false, fmt::format("rank {}: no error although the ranks run different links", config.rank));
  }));
}

TEST_CASE("ranks on one host use shared memory unless one rank turns it off, with the same sums", "[collectives]") {
  for (int off_rank : {-1, 1}) {
    require_all_ok(run_ranks(3, [&](const transport::Config& config) {
      collectives::CommOptions comm_options;
      comm_options.shared_memory = config.rank != off_rank;
      Communicator comm(config, comm_options);
      std::vector<std::int32_t> x(300007);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>(i % 1000) * (comm.rank() + 1);
      comm.all_reduce(Buffer{x.data(), x.size(), DType::kInt32}, Buffer{x.data(), x.size(), DType::kInt32}, ReduceOp::SUM);
      for (std::size_t i = 0; i < x.size(); ++i)
        check(x[i] == static_cast<std::int32_t>(i % 1000) * 6, fmt::format("rank {}: element {} is {}", comm.rank(), i, x[i]));
      const std::string path = comm.host_path();
      if (off_rank < 0)
        check(path == "shared memory", fmt::format("rank {}: host path '{}'", comm.rank(), path));
      else
        check(path.starts_with("TCP") && path.find("rank 1: shared memory turned off") != std::string::npos,
              fmt::format("rank {}: host path '{}'", comm.rank(), path));
    }));
  }
}

TEST_CASE("a broadcast of more than 2 GiB arrives whole", "[collectives][large]") {
  RunOptions options;
  options.deadline = std::chrono::seconds(120);
  require_all_ok(run_ranks(2, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    const std::size_t n = (std::size_t{1} << 31) + 13;  // bytes: past every 32-bit count
    std::vector<uint8_t> x(n, 0);
    if (comm.rank() == 0)
      for (std::size_t i = 0; i < n; i += 4093) x[i] = static_cast<uint8_t>(i / 4093 * 31 + 1);
    comm.broadcast(Buffer{x.data(), n, DType::kUInt8}, Buffer{x.data(), n, DType::kUInt8}, 0);
    for (std::size_t i = 0; i < n; i += 4093)
      check(x[i] == static_cast<uint8_t>(i / 4093 * 31 + 1), fmt::format("byte {}", i));
    check(x[n - 1] == (((n - 1) % 4093 == 0) ? x[n - 1] : 0), "last byte");
  }, options));
}

TEST_CASE("CommOptions::from_env refuses chunk sizes outside 4 KiB to 1 GiB, negative numbers and switches past 1, reads the poll time and the stores", "[collectives]") {
  const auto with = [](const char* name, const char* value) {
    ::setenv(name, value, 1);
    std::string error;
    try {
      collectives::CommOptions::from_env();
    } catch (const std::invalid_argument& e) {
      error = e.what();
    }
    ::unsetenv(name);
    return error;
  };
  CHECK(with("RINGGRAD_CHUNK_BYTES", "8") == "RINGGRAD_CHUNK_BYTES=8 must be a multiple of 8 from 4096 to 1073741824");
  CHECK(with("RINGGRAD_CHUNK_BYTES", "1073741832").find("must be a multiple of 8") != std::string::npos);
  CHECK(with("RINGGRAD_CHUNK_BYTES", "-8") == "RINGGRAD_CHUNK_BYTES='-8' is not a whole number");
  CHECK(with("RINGGRAD_SHM", "-1") == "RINGGRAD_SHM='-1' is not a whole number");
  CHECK(with("RINGGRAD_SHM", "2") == "RINGGRAD_SHM=2 must be 0 (off) or 1 (on)");
  CHECK(with("RINGGRAD_CHECK", "2") == "RINGGRAD_CHECK=2 must be 0 (off) or 1 (on)");
  CHECK(with("RINGGRAD_CHECK", "0").empty());
  CHECK(with("RINGGRAD_CHUNK_BYTES", "4096").empty());
  CHECK(with("RINGGRAD_ALGO", "garbage").starts_with("RINGGRAD_ALGO: unknown algorithm 'garbage'"));
  CHECK(with("RINGGRAD_BACKEND", "garbage").starts_with("RINGGRAD_BACKEND: unknown backend 'garbage'"));
  CHECK(with("RINGGRAD_SHM_LINK", "1") == "RINGGRAD_SHM_LINK='1' must be fast or plain");
  CHECK(with("RINGGRAD_SHM_LINK", "").empty());
  CHECK(collectives::CommOptions::from_env().shm_link == ShmLinkKind::kFast);  // unset
  for (const auto& [value, link] : {std::pair{"fast", ShmLinkKind::kFast}, std::pair{"plain", ShmLinkKind::kPlain}}) {
    ::setenv("RINGGRAD_SHM_LINK", value, 1);
    CHECK(collectives::CommOptions::from_env().shm_link == link);
  }
  ::unsetenv("RINGGRAD_SHM_LINK");
  ::setenv("RINGGRAD_SHM", "0", 1);
  CHECK_FALSE(collectives::CommOptions::from_env().shared_memory);
  ::unsetenv("RINGGRAD_SHM");
  CHECK(collectives::CommOptions::from_env().shared_memory);
  CHECK(with("RINGGRAD_SHM_POLL_US", "-5") == "RINGGRAD_SHM_POLL_US='-5' is not a whole number");
  CHECK(with("RINGGRAD_SHM_POLL_US", " 5") == "RINGGRAD_SHM_POLL_US=' 5' is not a whole number");
  CHECK(with("RINGGRAD_SHM_POLL_US", "1000001") == "RINGGRAD_SHM_POLL_US=1000001 must be from 0 to 1000000 (1 s)");
  CHECK(with("RINGGRAD_SHM_POLL_US", "99999999999999999999") == "RINGGRAD_SHM_POLL_US=99999999999999999999 is too large");
  CHECK(with("RINGGRAD_SHM_POLL_US", "").empty());
  CHECK_FALSE(collectives::CommOptions::from_env().shm_poll.has_value());  // unset or empty: decided by the host
  ::setenv("RINGGRAD_SHM_POLL_US", "250", 1);
  CHECK(collectives::CommOptions::from_env().shm_poll == std::chrono::microseconds(250));
  ::unsetenv("RINGGRAD_SHM_POLL_US");
  CHECK(with("RINGGRAD_SHM_STREAM", "2") == "RINGGRAD_SHM_STREAM=2 must be 0 (off) or 1 (on)");
  CHECK(with("RINGGRAD_SHM_STREAM", "auto") == "RINGGRAD_SHM_STREAM='auto' is not a whole number");
  CHECK(collectives::CommOptions::from_env().shm_stores == collectives::ShmStores::kAuto);  // unset: by measurement
  for (const auto& [value, stores] : {std::pair{"0", collectives::ShmStores::kPlain}, std::pair{"1", collectives::ShmStores::kStreaming}}) {
    ::setenv("RINGGRAD_SHM_STREAM", value, 1);
    CHECK(collectives::CommOptions::from_env().shm_stores == stores);
  }
  ::unsetenv("RINGGRAD_SHM_STREAM");
}

TEST_CASE("RINGGRAD_FLIGHT_RECORDER_ENTRIES is a whole number up to a million, and 0 turns recording off", "[collectives]") {
  const auto with = [](const char* value) {
    ::setenv("RINGGRAD_FLIGHT_RECORDER_ENTRIES", value, 1);
    std::string said;
    try {
      said = std::to_string(collectives::flight_recorder_capacity());
    } catch (const std::invalid_argument& e) {
      said = e.what();
    }
    ::unsetenv("RINGGRAD_FLIGHT_RECORDER_ENTRIES");
    return said;
  };
  // "abc" once read as 0 (recording off) and "-1" as 2^64 - 1 (every collective kept).
  CHECK(with("abc") == "RINGGRAD_FLIGHT_RECORDER_ENTRIES='abc' is not a whole number");
  CHECK(with("-1") == "RINGGRAD_FLIGHT_RECORDER_ENTRIES='-1' is not a whole number");
  CHECK(with("1000001") == "RINGGRAD_FLIGHT_RECORDER_ENTRIES=1000001 must be from 0 (off) to 1000000");
  CHECK(with("0") == "0");
  CHECK(with("50") == "50");
  CHECK(collectives::flight_recorder_capacity() == 2000);  // unset
}

TEST_CASE("a thread polls for 5 ms while every busy thread has a CPU, 20 us when they outnumber the CPUs", "[collectives]") {
  CHECK(collectives::shm_poll_default(1, 1) == std::chrono::microseconds(5000));
  CHECK(collectives::shm_poll_default(2, 2) == std::chrono::microseconds(5000));
  CHECK(collectives::shm_poll_default(3, 2) == std::chrono::microseconds(20));
}

TEST_CASE("a collective on the worker polls as if alone only while a caller waits for it", "[collectives]") {
  const std::chrono::microseconds alone(5000), beside(20);
  CHECK(collectives::ShmPoll{alone, beside, nullptr}.now() == alone);  // on the caller's own thread
  std::atomic<int> waiting = 0;
  const collectives::ShmPoll on_worker{alone, beside, &waiting};
  CHECK(on_worker.now() == beside);  // the caller computes meanwhile
  waiting = 1;
  CHECK(on_worker.now() == alone);
}

TEST_CASE("the CPUs ranks share are the union of their affinity masks", "[collectives]") {
  const std::vector<int> cpus = transport::allowed_cpus();  // the CPUs this test may run on
  if (cpus.size() < 2) return;  // needs two CPUs to bind two ranks apart
  // Each rank bound to a CPU of its own (as ringgrad-run binds 2 ranks on 2 CPUs, or mpirun
  // --bind-to core): 2 CPUs together. Both bound to the same CPU: 1.
  for (const bool apart : {true, false}) {
    require_all_ok(run_ranks(2, [&](const transport::Config& config) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[apart ? static_cast<std::size_t>(config.rank) : 0], &one);
      check(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity");
      transport::Transport transport(config);
      std::string why;
      auto peers = collectives::ShmPeers::connect(transport, 1 << 16, true, collectives::ShmStores::kAuto,
                                                  collectives::ShmLinkKind::kFast, why);
      check(peers != nullptr, fmt::format("rank {}: no shared memory: {}", config.rank, why));
      check(peers->cpus() == (apart ? 2 : 1), fmt::format("rank {}: {} CPUs together", config.rank, peers->cpus()));
    }));
  }
}

TEST_CASE("a first host collective that rides in the argument check still sets up shared memory", "[collectives]") {
  require_all_ok(run_ranks(2, [&](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    double loss = comm.rank() + 1.0;  // one float64: a one-shot all-reduce inside the check's header
    comm.all_reduce(Buffer{&loss, 1, DType::kFloat64}, Buffer{&loss, 1, DType::kFloat64}, ReduceOp::SUM);
    check(loss == 3.0, fmt::format("rank {}: sum {}", comm.rank(), loss));
    const std::string path = comm.host_path();
    check(path == "shared memory", fmt::format("rank {}: host path '{}'", comm.rank(), path));
  }));
}

// A one-shot all-reduce whose vector is too long for the check's header sends it right behind
// the header (algorithms/piggyback.h: piggyback_bytes): the sums must be the closed form's at every length around
// the header's kHeaderData bytes and kPiggybackMaxBytes (64 KiB), out of place and in place, and ranks whose
// bodies differ in length must still get the named error and stay in step.
TEST_CASE("vectors carried behind the check's header sum right, and bodies of different lengths are named", "[collectives]") {
  for (const bool shm : {true, false}) {
    for (const int p : {1, 2, 3}) {
      INFO((shm ? "shared memory, " : "TCP, ") << p << " ranks");
      require_all_ok(run_ranks(p, [&](const transport::Config& config) {
        collectives::CommOptions options;
        options.shared_memory = shm;
        Communicator comm(config, options);
        const int r = comm.rank();
        const float ranks_sum = static_cast<float>(p * (p + 1) / 2);
        constexpr std::size_t in_header = collectives::kHeaderData / sizeof(float);
        constexpr std::size_t most = collectives::kPiggybackMaxBytes / sizeof(float);
        for (const std::size_t n : {in_header, in_header + 1, std::size_t{1000}, most, most + 1}) {
          std::vector<float> x(n), y(n);
          for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7) * static_cast<float>(r + 1);
          comm.all_reduce(Buffer{x.data(), n, DType::kFloat32}, Buffer{y.data(), n, DType::kFloat32}, ReduceOp::SUM,
                          Algo::kOneShot);
          comm.all_reduce(Buffer{x.data(), n, DType::kFloat32}, Buffer{x.data(), n, DType::kFloat32}, ReduceOp::SUM,
                          Algo::kOneShot);
          for (std::size_t i = 0; i < n; ++i) {
            const float want = static_cast<float>(i % 7) * ranks_sum;
            check(y[i] == want && x[i] == want,
                  fmt::format("rank {}, {} floats: element {} is {} out of place and {} in place, not {}", r, n, i, y[i],
                              x[i], want));
          }
        }
        if (p == 1) return;  // nobody to disagree with
        std::vector<float> v(1001, 1.0f);
        const std::size_t m = r == 1 ? 1001 : 1000;
        expect_error("bodies of 4000 and 4004 bytes", [&] {
          comm.all_reduce(Buffer{v.data(), m, DType::kFloat32}, Buffer{v.data(), m, DType::kFloat32}, ReduceOp::SUM);
        }, {"ranks disagree on count: 1000 on rank", "1001 on rank 1"});
        std::vector<float> after(100, static_cast<float>(r + 1));
        comm.all_reduce(Buffer{after.data(), 100, DType::kFloat32}, Buffer{after.data(), 100, DType::kFloat32}, ReduceOp::SUM);
        check(after[99] == ranks_sum, fmt::format("rank {}: all_reduce after the error gave {}", r, after[99]));
      }));
    }
  }
}

// A body is one piece of its sender's chunk: a rank with a smaller chunk must still read it
// whole over TCP (where the first host collective is checked) and report the chunk sizes.
TEST_CASE("ranks with different chunk sizes get the named error when a body would follow", "[collectives]") {
  require_all_ok(run_ranks(2, [&](const transport::Config& config) {
    collectives::CommOptions options;
    options.chunk_bytes = config.rank == 1 ? 4096 : 128 << 10;
    Communicator comm(config, options);
    std::vector<float> x(2048, 1.0f);  // 8 KiB: a body behind rank 0's header, none behind rank 1's
    expect_error("chunk sizes", [&] {
      comm.all_reduce(Buffer{x.data(), x.size(), DType::kFloat32}, Buffer{x.data(), x.size(), DType::kFloat32},
                      ReduceOp::SUM, Algo::kOneShot);
    }, {"ranks disagree on chunk_bytes (RINGGRAD_CHUNK_BYTES): 131072 on rank 0; 4096 on rank 1"});
  }));
}

// With the check off on rank 1 only, rank 1's first collective would send data while the
// others wait for its header: the ranks compare the setting as they start instead.
TEST_CASE("ranks that disagree on RINGGRAD_CHECK get the named error as the communicator starts", "[collectives]") {
  require_all_ok(run_ranks(3, [&](const transport::Config& config) {
    collectives::CommOptions options;
    options.check_args = config.rank != 1;
    expect_error("check on ranks 0 and 2 only", [&] { Communicator comm(config, options); },
                 {fmt::format("Communicator on rank {}: ", config.rank),
                  "ranks disagree on the argument check (RINGGRAD_CHECK): off on rank 1; on on ranks 0, 2"});
  }));
}

}  // namespace ringgrad::test
