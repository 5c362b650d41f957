// Batched send/recv: a ring exchange in both directions at once, of messages far larger than a
// socket buffer (a blocking send first would deadlock) and around the 16 KiB a peer that runs a
// batch on the caller's thread (HostLink::eager_bytes), with 5 real processes and with 2 (whose
// two sends go to one peer); and a bad op in a batch is a named error on the rank that made it.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "collectives/communicator.h"
#include "tests/support/multiprocess.h"

namespace ringgrad::test {
namespace {

using collectives::Buffer;
using collectives::Communicator;
using collectives::DType;
using collectives::P2POp;

// Element i of what rank `from` sends to rank `to`: unique to the pair and the index.
int32_t value(int from, int to, std::size_t i) { return static_cast<int32_t>(i * 31 + static_cast<std::size_t>(from * 7 + to)); }

std::vector<int32_t> message(int from, int to, std::size_t n) {
  std::vector<int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(from, to, i);
  return v;
}

void expect_message(const std::vector<int32_t>& got, int from, int to) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != value(from, to, i))
      throw std::runtime_error(fmt::format("rank {}: element {} from rank {} is {}, expected {}", to, i, from, got[i],
                                           value(from, to, i)));
}

void ring_both_ways(bool async, int world_size) {
  // 16 KiB to each peer runs on the caller's thread, 4 bytes more is posted; with 2 ranks both
  // sends go to the one peer, so half of that each.
  const std::size_t eager = (16 << 10) / sizeof(int32_t) / (world_size == 2 ? 2 : 1);
  const auto results = run_ranks(world_size, [&](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    const int p = comm.world_size(), r = comm.rank(), right = (r + 1) % p, left = (r + p - 1) % p;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, eager, eager + 1, std::size_t{1000003}, std::size_t{4} << 20}) {
      auto to_right = message(r, right, n), to_left = message(r, left, n);
      std::vector<int32_t> from_left(n, -1), from_right(n, -1);
      // Sends first on every rank: with blocking sends of 16 MiB this order would deadlock.
      std::vector<P2POp> ops = {P2POp::send(Buffer{to_right.data(), n, DType::kInt32}, right),
                                P2POp::send(Buffer{to_left.data(), n, DType::kInt32}, left),
                                P2POp::recv(Buffer{from_left.data(), n, DType::kInt32}, left),
                                P2POp::recv(Buffer{from_right.data(), n, DType::kInt32}, right)};
      if (async) comm.batch_isend_irecv(std::move(ops), 5).wait();
      else comm.batch_send_recv(std::move(ops), 5);
      expect_message(from_left, left, r);
      expect_message(from_right, right, r);
    }
  });
  INFO(describe(results));
  for (const auto& res : results) CHECK(res.ok());
}

}  // namespace

TEST_CASE("a batched ring exchange in both directions with 5 ranks arrives whole", "[collectives]") {
  ring_both_ways(false, 5);
}

TEST_CASE("a batched exchange of 2 ranks, two sends to the one peer, arrives whole", "[collectives]") {
  ring_both_ways(false, 2);
}

TEST_CASE("batch_isend_irecv's Work completes the same exchange", "[collectives]") { ring_both_ways(true, 5); }

TEST_CASE("a bad op in a batch is refused on its rank, naming the op, and nothing is sent", "[collectives]") {
  const auto results = run_ranks(2, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    const int r = comm.rank(), peer = 1 - r;
    std::vector<float> a(8, static_cast<float>(r)), b(8, -1.0f);
    if (r == 0) {
      try {
        comm.batch_send_recv({P2POp::send(Buffer{a.data(), 8, DType::kFloat32}, 1), P2POp::recv(Buffer{b.data(), 8, DType::kFloat32}, 2)});
        check(false, "a batch with peer 2 in a world of 2 ran");
      } catch (const collectives::CollectiveError& e) {
        const std::string what = e.what();
        check(what.find("batch_send_recv on rank 0: op 1 (recv from rank 2): peer 2 is not another rank of this world of 2") !=
                  std::string::npos,
              fmt::format("message: {}", what));
      }
    }
    // The refused batch sent nothing: the next exchange pairs up as if it never happened.
    comm.batch_send_recv({P2POp::recv(Buffer{b.data(), 8, DType::kFloat32}, peer), P2POp::send(Buffer{a.data(), 8, DType::kFloat32}, peer)});
    check(b[7] == static_cast<float>(peer), fmt::format("rank {} got {} from rank {}", r, b[7], peer));
  });
  INFO(describe(results));
  for (const auto& res : results) CHECK(res.ok());
}

}  // namespace ringgrad::test
