// Point-to-point messages between real processes on loopback: every byte arrives intact at
// every size, concurrent asynchronous operations in both directions complete, and sync and
// async calls on one peer stay in issue order.

#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "tests/support/multiprocess.h"
#include "tests/transport/pattern.h"
#include "transport/transport.h"

namespace {

using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::pattern;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Request;
using ringgrad::transport::Transport;

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

TEST_CASE("blocking and asynchronous calls on one peer stay in issue order") {
  require_ok(run_ranks(2, [](const Config& config) {
    Transport t(config);
    const std::vector<size_t> sizes = {3 << 20, 10, 0, 1 << 20, 77};  // large ones overtake nothing
    if (t.rank() == 0) {
      std::vector<std::vector<std::byte>> out;
      for (size_t i = 0; i < sizes.size(); ++i) out.push_back(pattern(sizes[i], i));
      auto a = t.isend(1, out[0], 0);
      t.send(1, out[1], 1);  // queued behind the asynchronous send, completed by the progress thread
      auto c = t.isend(1, out[2], 2);
      t.send(1, out[3], 3);
      auto e = t.isend(1, out[4], 4);
      a.wait(), c.wait(), e.wait();
    } else {
      std::vector<std::vector<std::byte>> in;
      for (size_t size : sizes) in.emplace_back(size);
      t.recv(0, in[0], 0);
      auto b = t.irecv(0, in[1], 1);
      auto c = t.irecv(0, in[2], 2);
      t.recv(0, in[3], 3);
      auto e = t.irecv(0, in[4], 4);
      b.wait(), c.wait(), e.wait();
      for (size_t i = 0; i < sizes.size(); ++i) check(in[i] == pattern(sizes[i], i), fmt::format("message {}", i));
    }
  }));
}

TEST_CASE("a ring sends to the next rank while receiving from the previous one") {
  require_ok(run_ranks(4, [](const Config& config) {
    Transport t(config);
    const int p = t.world_size(), next = (t.rank() + 1) % p, prev = (t.rank() + p - 1) % p;
    // 8 MiB per step is far beyond the socket buffers: every rank must send and receive at once.
    std::vector<std::byte> out = pattern(size_t{8} << 20, static_cast<uint64_t>(t.rank())), in(out.size());
    for (int step = 0; step < p - 1; ++step) {
      auto request = t.isend(next, out, static_cast<uint64_t>(step));
      t.recv(prev, in, static_cast<uint64_t>(step));
      request.wait();
      std::swap(out, in);  // pass the received block on
    }
    // After p-1 steps each rank holds the block of the rank p-1 places back, i.e. next.
    check(out == pattern(out.size(), static_cast<uint64_t>(next)), "block after the ring");
  }));
}
