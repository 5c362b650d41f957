// The framed exchange over shared memory (ShmLink::send_recv_framed): a head alone, a head with
// a small body in one piece, and a head with a body too large for one (two pieces) each arrive
// as sent, whichever form the peer chose; a body longer or shorter than the receiver was told,
// or a head too short, is a TransportError that says so.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/links/host_memory_link.h"
#include "collectives/links/shm_link.h"
#include "collectives/links/shm_peers.h"
#include "tests/support/multiprocess.h"
#include "tests/support/require_all_ok.h"
#include "transport/transport.h"

namespace ringgrad::test {
namespace {

using collectives::kShmFramedBytes;

constexpr std::size_t kHead = 48, kChunk = 64 << 10;

// Byte i of rank r's head or body of n bytes.
std::byte byte_of(int r, std::size_t n, std::size_t i) { return static_cast<std::byte>(r * 101 + n * 7 + i * 13); }

std::vector<std::byte> bytes_of(int r, std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = byte_of(r, n, i);
  return v;
}

// Runs `body` on 2 ranks, each with a ShmLink to the other.
void on_two_ranks(const std::function<void(collectives::ShmLink&, int rank)>& body) {
  require_all_ok(run_ranks(2, [&](const transport::Config& config) {
    transport::Transport transport(config);
    std::string why;
    auto peers = collectives::ShmPeers::connect(transport, kChunk, true, collectives::ShmStores::kPlain,
                                                collectives::ShmLinkKind::kFast, why);
    check(peers != nullptr, fmt::format("rank {}: no shared memory: {}", config.rank, why));
    collectives::HostBuffers buffers;
    const std::atomic<int> none{0};
    collectives::ShmLink link(*peers, transport, 1, 1, collectives::ShmPoll{{}, {}, &none}, buffers);
    body(link, config.rank);
  }));
}

}  // namespace

TEST_CASE("shared memory: heads with bodies of every form arrive as sent", "[collectives]") {
  // 0: a head alone; up to kShmFramedBytes together: one piece; beyond: two pieces.
  const std::vector<std::size_t> bodies = {0, 1, 16, 17, kShmFramedBytes - kHead, kShmFramedBytes - kHead + 1, kChunk};
  on_two_ranks([&](collectives::ShmLink& link, int r) {
    const int peer = 1 - r;
    for (std::size_t n : bodies) {
      // Each rank sends a body of n + r bytes: the two forms cross in one exchange.
      const std::size_t mine = n + static_cast<std::size_t>(r), theirs = n + static_cast<std::size_t>(peer);
      const std::vector<std::byte> head = bytes_of(r, kHead), body = bytes_of(r, mine);
      std::vector<std::byte> their_head(kHead), their_body;
      link.send_recv_framed(peer, head, body, peer, their_head, [&](std::span<const std::byte> h) {
        check(h.size() == kHead, "the head's size");
        their_body.assign(theirs, std::byte{0});
        return std::span<std::byte>(their_body);
      });
      check(their_head == bytes_of(peer, kHead), fmt::format("rank {}: head beside a body of {} bytes", r, theirs));
      check(their_body == bytes_of(peer, theirs), fmt::format("rank {}: body of {} bytes", r, theirs));
    }
  });
}

TEST_CASE("shared memory: a body unlike what its head says, or a short head, is named", "[collectives]") {
  // A TransportError leaves the link broken (the piece stays unread), so one case a run.
  const bool short_head = GENERATE(false, true);
  on_two_ranks([&](collectives::ShmLink& link, int r) {
    const std::vector<std::byte> head = bytes_of(r, kHead), body = bytes_of(r, 100);
    if (r == 0) {
      if (short_head) link.send(1, head.data(), 40);  // a head 8 bytes short
      else link.send_recv_framed(1, head, body, -1, {}, {});
      return;
    }
    std::vector<std::byte> their_head(kHead), their_body(96);
    std::string error = "no error";
    try {
      link.send_recv_framed(-1, {}, {}, 0, their_head, [&](std::span<const std::byte>) { return std::span<std::byte>(their_body); });
    } catch (const std::exception& e) {
      error = e.what();
    }
    const std::string expected = short_head ? "rank 1: rank 0 sent a head of 40 bytes, expected 48"
                                            : "rank 1: rank 0 sent a body of 100 bytes behind its head, which says 96";
    check(error.find(expected) != std::string::npos, error);
  });
}

}  // namespace ringgrad::test
