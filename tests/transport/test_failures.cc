// Failures between real processes: a mismatched receive, a killed peer and a silent peer each
// make the waiting rank throw a TransportError that names both ranks, the operation and the
// bytes done, instead of hanging or handing back wrong bytes.

#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/multiprocess.h"
#include "transport/transport.h"

namespace {

using namespace std::chrono_literals;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::RunOptions;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Transport;
using ringgrad::transport::TransportError;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Runs body and returns the message of the TransportError it throws; fails if it throws none.
template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const TransportError& e) {
    return e.what();
  }
  throw std::runtime_error("expected a TransportError, got none");
}

}  // namespace

TEST_CASE("a receive of the wrong length or tag is an error on both sides") {
  auto results = run_ranks(2, [](const Config& config) {
    Transport t(config);
    std::vector<std::byte> data(100);
    if (t.rank() == 0) {
      t.send(1, data, 5);
      // Rank 1 refuses the message and closes the connection: rank 0's next receive fails.
      std::string error = error_of([&] { t.recv(1, data, 6); });
      check(contains(error, "rank 0: recv from rank 1"), error);
    } else {
      std::vector<std::byte> small(64);
      std::string error = error_of([&] { t.recv(0, small, 5); });
      check(contains(error, "rank 1: recv from rank 0 (tag 5, 64 bytes)"), error);
      check(contains(error, "has tag 5 and 100 bytes, this receive expects tag 5 and 64 bytes"), error);
      // The connection stays failed: a later operation on it fails at once with the same cause.
      error = error_of([&] { t.send(0, small, 6); });
      check(contains(error, "rank 1: send to rank 0") && contains(error, "mismatch"), error);
    }
  });
  INFO(describe(results));
  REQUIRE(results[0].ok());
  REQUIRE(results[1].ok());
}

TEST_CASE("a receive with the wrong tag is an error") {
  auto results = run_ranks(2, [](const Config& config) {
    Transport t(config);
    std::vector<std::byte> data(8);
    if (t.rank() == 0) {
      t.send(1, data, 41);
    } else {
      std::string error = error_of([&] { t.recv(0, data, 42); });
      check(contains(error, "the next message from rank 0 has tag 41 and 8 bytes, this receive expects tag 42"), error);
    }
  });
  INFO(describe(results));
  REQUIRE(results[1].ok());
}

TEST_CASE("a killed peer makes the survivor throw naming both ranks and the bytes done") {
  RunOptions options;
  options.timeout = 30s;  // far beyond the test: the failure must come from the closed socket
  auto results = run_ranks(3, [](const Config& config) {
    Transport t(config);
    if (t.rank() == 2) ::kill(::getpid(), SIGKILL);
    std::vector<std::byte> big(size_t{64} << 20);
    if (t.rank() == 0) {  // blocking receive from the dead rank
      std::string error = error_of([&] { t.recv(2, big, 1); });
      check(contains(error, "rank 0: recv from rank 2 (tag 1, 67108864 bytes) failed after 0 of 67108864 bytes"), error);
      check(contains(error, "closed the connection"), error);
    } else {  // a send larger than the socket buffers, asynchronously
      auto request = t.isend(2, big, 1);
      std::string error = error_of([&] { request.wait(); });
      check(contains(error, "rank 1: send to rank 2 (tag 1, 67108864 bytes) failed after"), error);
    }
  }, options);
  INFO(describe(results));
  REQUIRE(results[0].ok());
  REQUIRE(results[1].ok());
  REQUIRE(results[2].signal == SIGKILL);
}

TEST_CASE("a silent peer fails blocking and asynchronous waits after the timeout") {
  RunOptions options;
  options.timeout = 1s;
  auto results = run_ranks(2, [](const Config& config) {
    Transport t(config);
    std::vector<std::byte> data(16);
    if (t.rank() == 1) {
      std::this_thread::sleep_for(2500ms);  // alive, connected, and silent past rank 0's timeouts
      return;
    }
    std::string error = error_of([&] { t.recv(1, data, 3); });
    check(contains(error, "rank 0: recv from rank 1 (tag 3, 16 bytes) failed after 0 of 16 bytes: no progress for 1 s"), error);
    // The connection is failed now; an asynchronous receive reports the same cause.
    auto request = t.irecv(1, data, 4);
    error = error_of([&] { request.wait(); });
    check(contains(error, "rank 0: recv from rank 1 (tag 4") && contains(error, "no progress for 1 s"), error);
  }, options);
  INFO(describe(results));
  REQUIRE(results[0].ok());
}

TEST_CASE("an asynchronous receive from a silent peer times out in wait()") {
  RunOptions options;
  options.timeout = 1s;
  auto results = run_ranks(2, [](const Config& config) {
    Transport t(config);
    std::vector<std::byte> data(16);
    if (t.rank() == 1) {
      std::this_thread::sleep_for(1500ms);
      return;
    }
    auto request = t.irecv(1, data, 3);
    std::string error = error_of([&] { request.wait(); });
    check(contains(error, "rank 0: recv from rank 1 (tag 3, 16 bytes) failed after 0 of 16 bytes: no progress for 1 s"), error);
  }, options);
  INFO(describe(results));
  REQUIRE(results[0].ok());
}

TEST_CASE("a peer that is not another rank is an argument error") {
  auto results = run_ranks(2, [](const Config& config) {
    Transport t(config);
    std::vector<std::byte> data(4);
    for (int peer : {t.rank(), -1, 2}) {
      std::string error = error_of([&] { t.send(peer, data, 0); });
      check(contains(error, fmt::format("rank {}: send with peer {}: not another rank", t.rank(), peer)), error);
    }
  });
  INFO(describe(results));
  REQUIRE(results[0].ok());
  REQUIRE(results[1].ok());
}

TEST_CASE("a timeout that is not positive is a configuration error naming the rank") {
  auto results = run_ranks(1, [](const Config& config) {
    Config mine = config;
    mine.world_size = 2;
    mine.rank = 1;
    for (auto timeout : {std::chrono::milliseconds(0), std::chrono::milliseconds(-5)}) {
      mine.timeout = timeout;
      std::string error = error_of([&] { Transport t(mine); });
      check(contains(error, fmt::format("rank 1: the timeout is {} ms; it must be positive", timeout.count())), error);
    }
  });
  INFO(describe(results));
  REQUIRE(results[0].ok());
}
