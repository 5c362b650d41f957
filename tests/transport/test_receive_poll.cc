// A small blocking receive reads the socket without waiting for a while before it sleeps
// (Config::receive_poll): what arrives during the poll, after it, or never (a closed peer)
// must all end as a plain blocking receive would. And the rule that sets the poll.
#include <catch2/catch.hpp>

#include <sys/socket.h>

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

namespace {

using namespace std::chrono_literals;
using ringgrad::transport::Config;
using ringgrad::transport::TransportError;
using ringgrad::transport::detail::Connection;
using ringgrad::transport::detail::Direction;
using ringgrad::transport::detail::Op;

Op make(Direction dir, std::vector<std::byte>& data, uint64_t tag) {
  Op op;
  op.dir = dir;
  op.data = data.data();
  op.size = data.size();
  op.tag = tag;
  return op;
}

// A connected pair whose receiver polls for `poll`; the sender sends `bytes` after `delay`, or
// shuts its end down instead when `close` is set. Returns the receive's error ("" if none) and
// checks the bytes.
std::string receive_after(std::chrono::microseconds poll, std::chrono::milliseconds delay, std::size_t bytes,
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
    if (close) return sender->fail("the test closes it");  // shuts the socket down: the receiver reads its end
    Op send = make(Direction::send, out, 5);
    sender->channel(Direction::send).run(send);
  });
  Op recv = make(Direction::recv, in, 5);
  std::string error;
  try {
    receiver->channel(Direction::recv).run(recv);
  } catch (const TransportError& e) {
    error = e.what();
  }
  peer.join();
  if (error.empty()) CHECK(in == out);
  sender->close();
  receiver->close();
  return error;
}

}  // namespace

TEST_CASE("a small receive gets its message whether it arrives during the poll or after it", "[transport]") {
  CHECK(receive_after(200ms, 1ms, 8).empty());        // arrives while it polls
  CHECK(receive_after(1ms, 50ms, 8).empty());         // after the poll: it slept, and wakes for it
  CHECK(receive_after(200ms, 1ms, 16 << 10).empty());  // the largest size that polls
  CHECK(receive_after(200ms, 1ms, 100000).empty());   // larger ones sleep at once
}

TEST_CASE("a peer that closes during the poll ends the receive with its error, not the timeout", "[transport]") {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string error = receive_after(2000ms, 5ms, 8, /*close=*/true);
  CHECK_THAT(error, Catch::Contains("closed"));
  CHECK(std::chrono::steady_clock::now() - t0 < 1000ms);  // seen as it polled, long before 5 s
}

TEST_CASE("receives poll only where every rank on the host can have a CPU, and RINGGRAD_TCP_POLL_US overrides it") {
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
  ::setenv("LOCAL_WORLD_SIZE", "1001", 1);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("LOCAL_WORLD_SIZE='1001' is not an integer in [1, 1000]"));
  ::setenv("RINGGRAD_TCP_POLL_US", "250", 1);  // read before the local count: it is not needed
  CHECK(Config::from_env().receive_poll == 250us);
  ::setenv("RINGGRAD_TCP_POLL_US", "-1", 1);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("RINGGRAD_TCP_POLL_US='-1'"));
}
