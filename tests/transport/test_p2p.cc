// Point-to-point messages between real processes on loopback: every byte arrives intact at
// every size, concurrent asynchronous operations in both directions complete, and sync and
// async calls on one peer stay in issue order.

#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "tests/support/multiprocess.h"
#include "transport/transport.h"

namespace {

using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Request;
using ringgrad::transport::Transport;

// Bytes that depend on the sender, the message and the position, so that a byte from another
// message, a shifted byte or a dropped one all show up.
std::vector<std::byte> pattern(size_t size, uint64_t seed) {
  std::vector<std::byte> bytes(size);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
    bytes[i] = static_cast<std::byte>(x);
  }
  return bytes;
}

void require_ok(const std::vector<ringgrad::test::RankResult>& results) {
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}

}  // namespace

TEST_CASE("blocking messages of every size arrive intact") {
  const std::vector<size_t> sizes = {0, 1, 2, 3, 7, 31, 32, 33, 4095, 4097, 65537, 1 << 20, (1 << 20) + 13, size_t{64} << 20};
  require_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    const int peer = 1 - t.rank();
    for (size_t i = 0; i < sizes.size(); ++i) {
      // Rank 0 sends first, then answers with rank 1's bytes back: both directions carry each size.
      if (t.rank() == 0) {
        auto out = pattern(sizes[i], i);
        t.send(peer, out, i);
        std::vector<std::byte> echo(sizes[i]);
        t.recv(peer, echo, i + 1000);
        check(echo == pattern(sizes[i], i + 7), fmt::format("echo of {} bytes", sizes[i]));
      } else {
        std::vector<std::byte> in(sizes[i]);
        t.recv(peer, in, i);
        check(in == pattern(sizes[i], i), fmt::format("message of {} bytes", sizes[i]));
        t.send(peer, pattern(sizes[i], i + 7), i + 1000);
      }
    }
  }));
}

TEST_CASE("many concurrent async sends and receives in both directions") {
  constexpr int kMessages = 64;
  require_ok(run_ranks(3, [&](const Config& config) {
    Transport t(config);
    // Every rank posts all its receives and sends to both peers at once, then waits on all.
    std::vector<std::vector<std::byte>> in, out;
    std::vector<Request> requests;
    in.reserve(2 * kMessages);  // the buffers must not move while their requests are pending
    out.reserve(2 * kMessages);
    for (int peer = 0; peer < t.world_size(); ++peer) {
      if (peer == t.rank()) continue;
      for (int m = 0; m < kMessages; ++m) {
        size_t size = static_cast<size_t>(m) * 9973 % (300 << 10);  // 0 .. 300 KiB, beyond socket buffers together
        in.emplace_back(size);
        requests.push_back(t.irecv(peer, in.back(), static_cast<uint64_t>(m)));
      }
      for (int m = 0; m < kMessages; ++m) {
        out.push_back(pattern(static_cast<size_t>(m) * 9973 % (300 << 10), static_cast<uint64_t>(t.rank() * 1000 + m)));
        requests.push_back(t.isend(peer, out.back(), static_cast<uint64_t>(m)));
      }
    }
    for (auto& r : requests) r.wait();
    size_t index = 0;
    for (int peer = 0; peer < t.world_size(); ++peer) {
      if (peer == t.rank()) continue;
      for (int m = 0; m < kMessages; ++m, ++index)
        check(in[index] == pattern(in[index].size(), static_cast<uint64_t>(peer * 1000 + m)),
              fmt::format("message {} from rank {}", m, peer));
    }
  }));
}
