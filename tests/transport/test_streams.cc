// Streams on one connection between real processes: messages of different streams interleave
// on the socket and each receive still gets the next message of its own stream, whether its
// receive was posted before the message arrived or after (held), from one thread or from one
// thread per stream; within a stream a mismatch is still an error at once.

#include <catch2/catch.hpp>

#include <thread>
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

struct Message {
  uint32_t stream;
  uint64_t tag;
  size_t size;
};

}  // namespace

TEST_CASE("streams: each receive gets its own stream's next message, in any posting order") {
  // Sent in this order; received in another. The first blocking receive (stream 0, 1 MiB)
  // reads stream 1's small message and part of its own header into its buffer first; the
  // receives of streams 1 and 2 are posted after their messages arrived.
  const std::vector<Message> sent = {{1, 5, 10}, {0, 7, 1 << 20}, {2, 5, 3 << 20}, {1, 6, 0}, {1, 8, 33}, {0, 9, 1}};
  const std::vector<int> order = {1, 5, 2, 0, 3, 4};
  require_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    if (t.rank() == 0) {
      for (size_t i = 0; i < sent.size(); ++i) t.send(1, pattern(sent[i].size, i), sent[i].tag, sent[i].stream);
      return;
    }
    for (size_t k = 0; k < order.size(); ++k) {
      const Message& m = sent[order[k]];
      std::vector<std::byte> in(m.size);
      if (k % 2 == 0) t.recv(0, in, m.tag, m.stream);
      else t.irecv(0, in, m.tag, m.stream).wait();
      check(in == pattern(m.size, order[k]), fmt::format("message {} (stream {}, {} bytes)", order[k], m.stream, m.size));
    }
  }));
}

TEST_CASE("streams: one thread per stream on each side, sync and async, sizes up to 2 MiB") {
  constexpr int kStreams = 3, kMessages = 40;
  auto size_of = [](int s, int m) { return static_cast<size_t>((m * 7919 + s * 104729) % (2 << 20)) >> (m % 5 * 4); };
  require_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    const int peer = 1 - t.rank();
    std::vector<std::thread> threads;
    std::vector<std::string> errors(kStreams);
    for (int s = 0; s < kStreams; ++s) {
      threads.emplace_back([&, s] {
        try {
          for (int m = 0; m < kMessages; ++m) {
            const auto stream = static_cast<uint32_t>(s);
            const uint64_t seed = static_cast<uint64_t>(s * 1000 + m);
            // Both ranks send and receive on every stream: rank 0 sends first, rank 1 echoes.
            std::vector<std::byte> in(size_of(s, m));
            if (t.rank() == 0) {
              t.isend(peer, pattern(in.size(), seed), static_cast<uint64_t>(m), stream).wait();
              t.recv(peer, in, static_cast<uint64_t>(m), stream);
            } else {
              if (m % 2 == 0) t.recv(peer, in, static_cast<uint64_t>(m), stream);
              else t.irecv(peer, in, static_cast<uint64_t>(m), stream).wait();
              t.send(peer, in, static_cast<uint64_t>(m), stream);
            }
            if (in != pattern(in.size(), seed)) errors[s] = fmt::format("stream {} message {} corrupted", s, m);
          }
        } catch (const std::exception& e) {
          errors[s] = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (const auto& e : errors) check(e.empty(), e);
  }));
}

TEST_CASE("streams: a tag mismatch within a stream fails at once, naming the stream") {
  require_ok(run_ranks(2, [&](const Config& config) {
    Transport t(config);
    if (t.rank() == 0) {
      t.send(1, pattern(8, 0), 1, 0);   // stream 0, held until stream 0's receive
      t.send(1, pattern(16, 1), 4, 3);  // stream 3, tag 4
      return;
    }
    std::vector<std::byte> in(16);
    std::string error;
    try {
      t.recv(0, in, 5, 3);
    } catch (const std::exception& e) {
      error = e.what();
    }
    check(error.find("on stream 3 has tag 4 and 16 bytes, this receive expects tag 5 and 16 bytes") != std::string::npos,
          "error was: " + error);
  }));
}
