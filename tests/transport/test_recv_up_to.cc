// Receives of at most N bytes (Transport::recv_up_to) between real processes: each takes one
// whole message, however much shorter than its buffer, and never the start of the next one,
// whether the message is read from the socket or was held for its stream; a longer message or
// another tag is an error that says so, and a silent peer's timeout names the bound.

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/require_all_ok.h"
#include "tests/transport/pattern.h"
#include "transport/transport.h"

namespace {

using ringgrad::test::check;
using ringgrad::test::pattern;
using ringgrad::test::require_all_ok;
using ringgrad::test::RunOptions;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Transport;

// The first `n` bytes of `buffer`.
std::vector<std::byte> head(const std::vector<std::byte>& buffer, std::size_t n) {
  return {buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n)};
}

}  // namespace

TEST_CASE("recv_up_to: messages sent back to back each arrive whole, shorter than the buffer or as long") {
  const std::vector<std::size_t> sizes = {0, 1, 31, 32, 33, 100, 4096, 16384, 7, 16384};
  require_all_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    if (t.rank() == 0) {
      for (std::size_t i = 0; i < sizes.size(); ++i) t.send(1, pattern(sizes[i], i), 9);
      t.send(1, pattern(5, 99), 10);  // then a plain receive of exactly 5 bytes
      return;
    }
    std::vector<std::byte> in(16384);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::size_t got = t.recv_up_to(0, in, 9);
      check(got == sizes[i], fmt::format("message {}: {} bytes received, {} sent", i, got, sizes[i]));
      check(head(in, got) == pattern(sizes[i], i), fmt::format("message {} ({} bytes)", i, sizes[i]));
    }
    std::vector<std::byte> last(5);
    t.recv(0, last, 10);
    check(last == pattern(5, 99), "the plain receive after them");
  }));
}

TEST_CASE("recv_up_to: a message held for its stream is taken whole, and one read on the way is held") {
  require_all_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    if (t.rank() == 0) {
      t.send(1, pattern(10, 1), 4, 2);  // stream 2 first: read and held by stream 1's receive
      t.send(1, pattern(20, 2), 4, 1);
      return;
    }
    std::vector<std::byte> in(64);
    const std::size_t on_1 = t.recv_up_to(0, in, 4, 1);
    check(on_1 == 20 && head(in, on_1) == pattern(20, 2), fmt::format("stream 1: {} bytes", on_1));
    const std::size_t on_2 = t.recv_up_to(0, in, 4, 2);
    check(on_2 == 10 && head(in, on_2) == pattern(10, 1), fmt::format("stream 2 (held): {} bytes", on_2));
  }));
}

TEST_CASE("recv_up_to: a message longer than the buffer, or of another tag, fails naming both") {
  const auto error_of = [](auto&& receive) {
    try {
      receive();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const bool longer = GENERATE(true, false);
  require_all_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    if (t.rank() == 0) {
      t.send(1, pattern(100, 0), longer ? 3 : 8);
      return;
    }
    std::vector<std::byte> in(64);
    const std::string error = error_of([&] { t.recv_up_to(0, in, 3); });
    const std::string expected = longer ? "has tag 3 and 100 bytes, this receive expects tag 3 and at most 64 bytes"
                                        : "has tag 8 and 100 bytes, this receive expects tag 3 and at most 64 bytes";
    check(error.find(expected) != std::string::npos, "error was: " + error);
  }));
}

TEST_CASE("recv_up_to: a silent peer's timeout says the receive was of at most its buffer") {
  RunOptions options;
  options.timeout = std::chrono::seconds(1);
  require_all_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    if (t.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // connected and silent past rank 1's timeout
      return;
    }
    std::vector<std::byte> in(64);
    std::string error = "no error";
    try {
      t.recv_up_to(0, in, 3);
    } catch (const std::exception& e) {
      error = e.what();
    }
    check(error.find("rank 1: recv from rank 0 (tag 3, at most 64 bytes) failed after 0 of at most 64 bytes: no progress for 1 s") !=
              std::string::npos,
          "error was: " + error);
  }, options));
}
