// Small calls whose data rides with the argument check (algorithms/piggyback.h): an
// all-gather, a broadcast or an all-to-all of at most one piece travels inside the check's
// header or right behind it, and piggyback() puts it in place. Every byte must land
// where the collective says, in place and out of place, on either side of both limits (the
// header's kHeaderData bytes, and one piece), over shared memory and TCP, on 2 and 3 ranks.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "collectives/algorithms/piggyback.h"
#include "collectives/communicator.h"
#include "tests/support/multiprocess.h"
#include "tests/support/require_all_ok.h"

namespace ringgrad::test {
namespace {

using collectives::Buffer;
using collectives::CallHeader;
using collectives::CollKind;
using collectives::Communicator;
using collectives::ConstBuffer;
using collectives::DType;
using collectives::kHeaderData;

constexpr std::size_t kChunk = 4096;

// Byte i of what rank `from` sends rank `to` in a call of n bytes a block.
std::uint8_t byte_of(int from, int to, std::size_t n, std::size_t i) {
  return static_cast<std::uint8_t>(from * 101 + to * 37 + n * 7 + i * 13);
}

CallHeader header(CollKind kind, std::size_t count, int root = -1) {
  CallHeader h{};
  h.count = count;
  h.chunk_bytes = kChunk;
  h.root = root;
  h.kind = static_cast<std::uint8_t>(kind);
  h.dtype = static_cast<std::uint8_t>(DType::kUInt8);
  return h;
}

}  // namespace

TEST_CASE("which calls' data rides with the check, and how many bytes each rank sends", "[collectives]") {
  using collectives::piggyback_bytes;
  CHECK(piggyback_bytes(header(CollKind::kAllGather, 1), 0) == 1);
  CHECK(piggyback_bytes(header(CollKind::kAllGather, kHeaderData + 1), 1) == kHeaderData + 1);
  CHECK(piggyback_bytes(header(CollKind::kAllToAll, kChunk), 2) == kChunk);  // one piece a peer
  CHECK(piggyback_bytes(header(CollKind::kAllToAll, kChunk + 1), 2) == 0);
  CallHeader large = header(CollKind::kAllGather, collectives::kPiggybackMaxBytes);
  large.chunk_bytes = 1 << 20;
  CHECK(piggyback_bytes(large, 0) == collectives::kPiggybackMaxBytes);  // a larger chunk: kPiggybackMaxBytes caps
  large.count += 1;
  CHECK(piggyback_bytes(large, 0) == 0);
  CHECK(piggyback_bytes(header(CollKind::kBroadcast, 8, 1), 1) == 8);        // the root sends
  CHECK(piggyback_bytes(header(CollKind::kBroadcast, 8, 1), 0) == 0);        // the others only listen
  CHECK(piggyback_bytes(header(CollKind::kAllGather, 0), 0) == 0);
  CHECK(piggyback_bytes(header(CollKind::kReduceScatter, 8), 0) == 0);       // reduces in its own order
  CallHeader ring = header(CollKind::kAllReduce, 8), one_shot = ring;
  one_shot.algo = static_cast<std::uint8_t>(collectives::Algo::kOneShot);
  CHECK(piggyback_bytes(ring, 0) == 0);
  CHECK(piggyback_bytes(one_shot, 0) == 8);
  for (auto flag : {&CallHeader::on_device, &CallHeader::by_mpi, &CallHeader::invalid}) {
    CallHeader h = header(CollKind::kAllGather, 8);
    h.*flag = 1;
    CHECK(piggyback_bytes(h, 0) == 0);
  }
}

TEST_CASE("small all-gathers, broadcasts and all-to-alls riding with the check deliver every byte", "[collectives]") {
  for (const bool shm : {true, false}) {
    for (const int p : {2, 3}) {
      INFO((shm ? "shared memory, " : "TCP, ") << p << " ranks");
      require_all_ok(run_ranks(p, [&](const transport::Config& config) {
        collectives::CommOptions options;
        options.shared_memory = shm;
        options.chunk_bytes = kChunk;
        Communicator comm(config, options);
        const int r = comm.rank();
        const auto P = static_cast<std::size_t>(p);
        for (const std::size_t n : {std::size_t{1}, kHeaderData, kHeaderData + 1, kChunk, kChunk + 1}) {
          const auto where = [&](const char* what, bool in_place, int from, std::size_t i) {
            return fmt::format("rank {}, {} of {} bytes {}: byte {} from rank {}", r, what, n,
                               in_place ? "in place" : "out of place", i, from);
          };
          for (const bool in_place : {false, true}) {
            // All-gather: block q of recv is rank q's send.
            std::vector<std::uint8_t> mine(n), all(P * n);
            for (std::size_t i = 0; i < n; ++i) mine[i] = byte_of(r, 0, n, i);
            if (in_place) std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(r * n));
            const std::uint8_t* send = in_place ? all.data() + r * n : mine.data();
            comm.all_gather(ConstBuffer{send, n, DType::kUInt8}, Buffer{all.data(), P * n, DType::kUInt8});
            for (int q = 0; q < p; ++q)
              for (std::size_t i = 0; i < n; ++i)
                check(all[q * n + i] == byte_of(q, 0, n, i), where("all-gather", in_place, q, i));
            // All-to-all: block q of recv is what rank q sent this rank.
            std::vector<std::uint8_t> out(P * n), in(P * n);
            for (int q = 0; q < p; ++q)
              for (std::size_t i = 0; i < n; ++i) out[q * n + i] = byte_of(r, q, n, i);
            std::vector<std::uint8_t>& recv = in_place ? out : in;
            comm.all_to_all(ConstBuffer{out.data(), P * n, DType::kUInt8}, Buffer{recv.data(), P * n, DType::kUInt8});
            for (int q = 0; q < p; ++q)
              for (std::size_t i = 0; i < n; ++i)
                check(recv[q * n + i] == byte_of(q, r, n, i), where("all-to-all", in_place, q, i));
          }
          // Broadcast from every root, the root in place.
          for (int root = 0; root < p; ++root) {
            std::vector<std::uint8_t> data(n, 0);
            if (r == root)
              for (std::size_t i = 0; i < n; ++i) data[i] = byte_of(root, 0, n, i);
            comm.broadcast(ConstBuffer{data.data(), n, DType::kUInt8}, Buffer{data.data(), n, DType::kUInt8}, root);
            for (std::size_t i = 0; i < n; ++i) check(data[i] == byte_of(root, 0, n, i), where("broadcast", true, root, i));
          }
        }
      }));
    }
  }
}

}  // namespace ringgrad::test
