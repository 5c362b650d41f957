// A small blocking receive reads the socket without waiting for a while before it sleeps
// (Config::receive_poll): what arrives during the poll, after it, or never (a peer that shuts
// down) must all end as a plain blocking receive would; which receives poll; and the rule that
// sets the poll.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "transport/channel.h"
#include "transport/config.h"
#include "transport/connection.h"
#include "transport/cpus.h"
#include "transport/error.h"
#include "tests/transport/channel_op.h"

namespace {

using namespace std::chrono_literals;
using ringgrad::transport::Config;
using ringgrad::transport::TransportError;
using ringgrad::transport::detail::Connection;
using ringgrad::transport::detail::Direction;
using ringgrad::transport::detail::Op;

struct Received {
  std::string error;                     // "" if the receive succeeded
  std::chrono::milliseconds cpu{0};      // the receiving thread's CPU time: polling spends it
  long sleeps = 0;                       // times the receiving thread gave up its CPU to wait
};

std::chrono::milliseconds thread_cpu() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return std::chrono::milliseconds(t.tv_sec * 1000 + t.tv_nsec / 1000000);
}

// Voluntary context switches of the calling thread: a thread that blocks in recvmsg adds one;
// a polling thread adds none, however often a loaded machine preempts it (those are involuntary).
long thread_sleeps() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

// A connected pair whose receiver polls for `poll`; the sender sends `bytes` after `delay`, or
// shuts its end down instead when `close` is set. Checks the bytes of a receive that succeeded.
Received receive_after(std::chrono::microseconds poll, std::chrono::milliseconds delay, std::size_t bytes,
                       bool close = false) {
  asio::io_context io;
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  auto sender = std::make_shared<Connection>(io, ringgrad::transport::net::Fd(sv[0]), 0, 1, 5000ms, 0us);
  auto receiver = std::make_shared<Connection>(io, ringgrad::transport::net::Fd(sv[1]), 1, 0, 5000ms, poll);
  std::vector<std::byte> out(bytes), in(bytes);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 7 + 1);
  std::thread peer([&] {
    std::this_thread::sleep_for(delay);
    if (close) return sender->fail("the test shuts it down");  // the receiver reads the end of its stream
    Op send = ringgrad::test::channel_op(Direction::send, out, 5);
    sender->channel(Direction::send).run(send);
  });
  Op recv = ringgrad::test::channel_op(Direction::recv, in, 5);
  Received r;
  const auto cpu0 = thread_cpu();
  const long sleeps0 = thread_sleeps();
  try {
    receiver->channel(Direction::recv).run(recv);
  } catch (const TransportError& e) {
    r.error = e.what();
  }
  r.cpu = thread_cpu() - cpu0;
  r.sleeps = thread_sleeps() - sleeps0;
  peer.join();
  if (r.error.empty()) CHECK(in == out);
  sender->close();
  receiver->close();
  return r;
}

}  // namespace

// A polling thread never gives up its CPU to wait; a sleeping one does, and spends little CPU.
// Only upper bounds are put on CPU time: a loaded machine may give a polling thread a sliver of a
// CPU, so a lower bound would test the machine's load, not the poll.
TEST_CASE("a small receive polls, then sleeps, and gets its message either way", "[transport]") {
  Received r = receive_after(200ms, 1ms, 8);  // arrives while it polls
  CHECK(r.error.empty());
  CHECK(r.sleeps == 0);
  r = receive_after(200ms, 100ms, 16 << 10);  // the largest size that polls: it waits on the CPU
  CHECK(r.error.empty());
  CHECK(r.sleeps == 0);
  r = receive_after(200ms, 100ms, (16 << 10) + 1);  // a larger one sleeps at once
  CHECK(r.error.empty());
  CHECK(r.sleeps >= 1);
  CHECK(r.cpu < 20ms);
  r = receive_after(20ms, 300ms, 8);  // the poll ends long before the message: it sleeps, then wakes for it
  CHECK(r.error.empty());
  CHECK(r.sleeps >= 1);
  CHECK(r.cpu < 150ms);
  r = receive_after(0us, 100ms, 8);  // no poll: it sleeps at once
  CHECK(r.error.empty());
  CHECK(r.sleeps >= 1);
  CHECK(r.cpu < 20ms);
}

TEST_CASE("a peer that shuts down during the poll ends the receive at once, naming the closed connection",
          "[transport]") {
  const auto t0 = std::chrono::steady_clock::now();
  const Received r = receive_after(2000ms, 5ms, 8, /*close=*/true);
  CHECK_THAT(r.error, Catch::Contains("closed"));
  CHECK(std::chrono::steady_clock::now() - t0 < 1000ms);  // seen while polling, not after the 2 s poll
}

TEST_CASE("receives poll only where every rank on the host can have a CPU, and RINGGRAD_TCP_POLL_US overrides it",
          "[transport]") {
  CHECK(ringgrad::transport::receive_poll_default(2, 2) == 50us);
  CHECK(ringgrad::transport::receive_poll_default(2, 4) == 50us);
  CHECK(ringgrad::transport::receive_poll_default(3, 2) == 0us);  // a poll would take the CPU a peer needs

  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "RINGGRAD_TCP_POLL_US"}) ::unsetenv(name);
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "1000", 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", "29500", 1);
  const int cpus = static_cast<int>(ringgrad::transport::allowed_cpus().size());
  // Without a local count, every rank of the world is taken to share this host.
  CHECK(Config::from_env().receive_poll == ringgrad::transport::receive_poll_default(1000, cpus));
  ::setenv("LOCAL_WORLD_SIZE", "1", 1);
  CHECK(Config::from_env().receive_poll == ringgrad::transport::receive_poll_default(1, cpus));
  ::setenv("LOCAL_WORLD_SIZE", "2000", 1);  // a hint beyond the world (an enclosing job's): the world
  CHECK(Config::from_env().receive_poll == ringgrad::transport::receive_poll_default(1000, cpus));
  ::setenv("LOCAL_WORLD_SIZE", "x", 1);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("LOCAL_WORLD_SIZE='x'"));
  ::setenv("RINGGRAD_TCP_POLL_US", "250", 1);  // read first: the local count is not even parsed
  CHECK(Config::from_env().receive_poll == 250us);
  ::setenv("RINGGRAD_TCP_POLL_US", "-1", 1);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("RINGGRAD_TCP_POLL_US='-1'"));
  for (const char* name : {"LOCAL_WORLD_SIZE", "RINGGRAD_TCP_POLL_US", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    ::unsetenv(name);
  }
}
