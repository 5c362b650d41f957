// Writing pieces into a shared-memory inbox (collectives/links/shm_copy.h): the streaming copy
// leaves the same bytes as memcpy at every length and alignment, and the rule that picks
// plain or streaming stores does what its comments say when fed the times of plain copies.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <vector>

#include "collectives/links/shm_copy.h"

namespace ringgrad::test {
namespace {

using collectives::InboxWriter;
using collectives::ShmStores;
using std::chrono::nanoseconds;

constexpr std::size_t kBig = InboxWriter::kTimedBytes;  // the smallest piece the rule times
// What a plain copy of kBig bytes takes at 1 and at 20 GB/s (bytes per ns).
constexpr nanoseconds kSlow{kBig / 1}, kFast{kBig / 20};

}  // namespace

TEST_CASE("copy_streaming leaves the bytes memcpy would, at every tail and at any alignment of either side", "[collectives]") {
  // Destination offsets 0, 8, 16 and 40 from a line: a slot of a chunk that is 8 mod 16 bytes
  // once started 8 bytes past one, where a 16-byte streaming store faults.
  alignas(64) std::byte dst[640];
  std::byte src[640 + 16];
  for (std::size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<std::byte>(i * 37 + 11);
  for (const std::size_t to : {0, 8, 16, 40}) {
    for (std::size_t from = 0; from < 16; from += 3) {
      for (std::size_t n = 0; n + to <= 4 * 64 + 17; ++n) {
        for (std::byte& b : dst) b = std::byte{0xee};
        collectives::copy_streaming(dst + to, src + from, n);
        for (std::size_t i = 0; i < sizeof dst; ++i) {
          const bool copied = i >= to && i < to + n;  // nothing outside [to, to + n) is touched
          const std::byte want = copied ? src[from + i - to] : std::byte{0xee};
          if (dst[i] != want)
            FAIL(fmt::format("{} bytes from source offset {} to destination offset {}: byte {} is {}, expected {}", n,
                             from, to, i, static_cast<int>(dst[i]), static_cast<int>(want)));
        }
      }
    }
  }
}

TEST_CASE("an inbox writer streams after kSlowInRow slow plain copies in a row, and looks again after kStreamPieces", "[collectives]") {
  InboxWriter w;
  CHECK_FALSE(w.streams(kBig));
  for (std::uint32_t i = 1; i < InboxWriter::kSlowInRow; ++i) w.plain_copy_took(kBig, kSlow);  // a first pass's faults
  CHECK_FALSE(w.streams(kBig));
  w.plain_copy_took(kBig, kFast);  // a fast one clears them
  for (std::uint32_t i = 1; i < InboxWriter::kSlowInRow; ++i) w.plain_copy_took(kBig, kSlow);
  CHECK_FALSE(w.streams(kBig));
  w.plain_copy_took(kBig - 1, nanoseconds(1'000'000));  // too small to count, however slow
  CHECK_FALSE(w.streams(kBig));
  w.plain_copy_took(kBig, kSlow);  // the last slow one in a row
  CHECK(w.streams(kBig));
  CHECK_FALSE(w.streams(kBig - 1));  // small pieces stay plain (and untimed)
  for (std::uint32_t i = 0; i < InboxWriter::kStreamPieces; ++i) {
    REQUIRE(w.streams(kBig));
    w.streamed();
  }
  CHECK_FALSE(w.streams(kBig));  // a plain copy looks again
  w.plain_copy_took(kBig, kSlow);  // one slow look is enough after streaming
  CHECK(w.streams(kBig));
  for (std::uint32_t i = 0; i < InboxWriter::kStreamPieces; ++i) w.streamed();
  w.plain_copy_took(kBig, kFast);  // a fast look: plain from now on
  CHECK_FALSE(w.streams(kBig));
  w.plain_copy_took(kBig, kSlow);
  CHECK_FALSE(w.streams(kBig));
}

TEST_CASE("RINGGRAD_SHM_STREAM's fixed choices ignore the times", "[collectives]") {
  InboxWriter plain(ShmStores::kPlain), streaming(ShmStores::kStreaming);
  for (int i = 0; i < 3; ++i) {
    plain.plain_copy_took(kBig, kSlow);
    streaming.plain_copy_took(kBig, kFast);
  }
  CHECK_FALSE(plain.streams(kBig));
  CHECK(streaming.streams(64));
  CHECK(streaming.streams(kBig));
}

TEST_CASE("a writer's timed plain copies and streamed pieces land in the slot as sent", "[collectives]") {
  std::vector<std::byte> src(kBig + 100), slot(kBig + 100);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 3);
  for (const ShmStores stores : {ShmStores::kAuto, ShmStores::kPlain, ShmStores::kStreaming}) {
    InboxWriter w(stores);
    for (const std::size_t n : {std::size_t{49}, kBig - 1, kBig, kBig + 100}) {
      std::fill(slot.begin(), slot.end(), std::byte{0});
      w.write(slot.data(), src.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        if (slot[i] != src[i]) FAIL(fmt::format("stores {}, {} bytes: byte {} differs", static_cast<int>(stores), n, i));
    }
  }
}

}  // namespace ringgrad::test
