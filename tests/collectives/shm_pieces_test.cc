// Pieces over shared memory: a piece of at most kShmInlineBytes crosses inside its slot's head
// line, a larger one in the slot (links/shm_peers.h). Every size around both limits, and
// messages whose last piece is small enough to go inline behind full ones, must arrive as sent
// (and sum as the closed form says), with more pieces in flight than an inbox has slots.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/links/shm_peers.h"
#include "tests/support/multiprocess.h"
#include "tests/support/require_all_ok.h"

namespace ringgrad::test {
namespace {

using collectives::Buffer;
using collectives::Communicator;
using collectives::ConstBuffer;
using collectives::DType;
using collectives::ReduceOp;
using collectives::kShmInlineBytes;

// Byte i of rank r's message of n bytes: differs by rank, position and length.
std::uint8_t byte_of(int r, std::size_t n, std::size_t i) { return static_cast<std::uint8_t>(r * 101 + n * 7 + i * 13); }

constexpr std::size_t kChunk = 4096;  // the smallest chunk: many pieces for few bytes

std::vector<std::size_t> sizes() {
  std::vector<std::size_t> s;
  for (std::size_t n = 1; n <= 2 * kShmInlineBytes + 1; ++n) s.push_back(n);
  for (std::size_t tail : {std::size_t{1}, kShmInlineBytes, kShmInlineBytes + 1})
    for (std::size_t whole : {1, 5}) s.push_back(whole * kChunk + tail);  // 5 pieces: more than the 4 slots
  s.push_back(kChunk);
  return s;
}

}  // namespace

TEST_CASE("broadcast and all-gather over shared memory deliver every size around the inline limit and the chunk", "[collectives]") {
  require_all_ok(run_ranks(2, [&](const transport::Config& config) {
    collectives::CommOptions options;
    options.chunk_bytes = kChunk;
    options.check_args = false;  // with it on, calls of one piece ride with the check (check_riders_test.cc)
    Communicator comm(config, options);
    const int r = comm.rank();
    for (const std::size_t n : sizes()) {
      std::vector<std::uint8_t> mine(n), got(n), both(2 * n);
      for (std::size_t i = 0; i < n; ++i) mine[i] = byte_of(r, n, i);
      // Broadcast from rank 0: pieces one way only. All-gather: both ways at once.
      comm.broadcast(ConstBuffer{mine.data(), n, DType::kUInt8}, Buffer{got.data(), n, DType::kUInt8}, 0);
      comm.all_gather(ConstBuffer{mine.data(), n, DType::kUInt8}, Buffer{both.data(), 2 * n, DType::kUInt8});
      for (std::size_t i = 0; i < n; ++i) {
        check(got[i] == byte_of(0, n, i),
              fmt::format("rank {}, broadcast of {} bytes: byte {} is {}, sent {}", r, n, i, got[i], byte_of(0, n, i)));
        for (int q = 0; q < 2; ++q)
          check(both[q * n + i] == byte_of(q, n, i),
                fmt::format("rank {}, all-gather of {} bytes: rank {}'s byte {} is {}, sent {}", r, n, q, i,
                            both[q * n + i], byte_of(q, n, i)));
      }
    }
    check(comm.host_path() == "shared memory", fmt::format("rank {}: host path {}", r, comm.host_path()));
  }));
}

TEST_CASE("all-reduces over shared memory sum right at every size around the inline limit, by either stores", "[collectives]") {
  // Ring and one-shot, so pieces of every size travel both inline and in slots while both
  // ranks send at once; 3 ranks so that each inbox sees two senders' turns interleave. Slot
  // pieces written by plain stores, and by streaming stores (links/shm_copy.h) whose tails
  // under a cache line go by memcpy; rank 2 keeps the default, which ranks may differ in. A
  // chunk of 8 mod 16 bytes too: its slots once began off a 16-byte boundary, where a
  // streaming store faults.
  const auto stores = GENERATE(collectives::ShmStores::kPlain, collectives::ShmStores::kStreaming);
  const std::size_t chunk = GENERATE(as<std::size_t>{}, kChunk, kChunk + 8);
  require_all_ok(run_ranks(3, [&](const transport::Config& config) {
    collectives::CommOptions options;
    options.chunk_bytes = chunk;
    options.check_args = false;  // the pieces themselves, not the check's header, carry the vectors
    if (config.rank < 2) options.shm_stores = stores;
    Communicator comm(config, options);
    const int r = comm.rank();
    for (const auto algo : {collectives::Algo::kRing, collectives::Algo::kOneShot}) {
      for (const std::size_t bytes : sizes()) {
        const std::size_t n = (bytes + 3) / 4;
        std::vector<std::int32_t> x(n);
        for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<std::int32_t>(i % 1000) * (r + 1);
        comm.all_reduce(Buffer{x.data(), n, DType::kInt32}, Buffer{x.data(), n, DType::kInt32}, ReduceOp::SUM, algo);
        for (std::size_t i = 0; i < n; ++i)
          check(x[i] == static_cast<std::int32_t>(i % 1000) * 6,
                fmt::format("rank {}, {} int32, {}, stores {}, chunk {}: element {} is {}", r, n,
                            collectives::algo_name(algo), static_cast<int>(stores), chunk, i, x[i]));
      }
    }
    check(comm.host_path() == "shared memory", fmt::format("rank {}: host path {}", r, comm.host_path()));
  }));
}

}  // namespace ringgrad::test
