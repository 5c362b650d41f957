// How ShmLink's sender writes a piece into a peer's shared-memory inbox.
//
// Trick: streaming stores when plain ones measure slow. The plain link memcpys every piece
// (plain stores): right when the two ranks' cores share a last-level cache, where the receiver
// then finds the piece. When they do not, every plain store must first take its line back from
// the receiver's cache, which read that slot a few pieces ago, one line at a time. Streaming
// (non-temporal) stores write to memory without fetching the line, but the receiver then reads
// the piece from memory, not from a shared cache: streaming every piece made the all-reduce 1.5x
// slower where the cache was shared. So a sender times its plain copies of large pieces and
// streams for a while after kSlowInRow slow ones in a row. Buys: where plain copies of 128 KiB
// pieces ran at 2-2.5 GB/s (streaming: 27-30 GB/s), a 1 MiB all-reduce took 92-121 us instead of
// 531-548, and a 64 KiB one 8.5 us instead of 36 (docs/collectives.md, "Plain or streaming
// stores" and "The plain shared-memory link beside the fast one"); elsewhere it costs two clock
// reads a piece. Chosen for pieces of at least kTimedBytes; RINGGRAD_SHM_STREAM=0 or 1 fixes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ringgrad::collectives {

/// Which stores write pieces into inboxes: RINGGRAD_SHM_STREAM unset (kAuto, by measurement), 0
/// (kPlain) or 1 (kStreaming).
enum class ShmStores { kAuto, kPlain, kStreaming };

/// dst <- src, n bytes, by streaming stores where the CPU has them (SSE2 on x86; elsewhere this is
/// memcpy), fenced before it returns, so that a release store after it publishes the bytes.
/// Neither pointer need be aligned: bytes before dst's first 64-byte boundary, and after its
/// last, go by memcpy (inbox slots start on one, shm_peers.h).
void copy_streaming(std::byte* dst, const std::byte* src, std::size_t n);

/// One sender's writes into one receiver's inbox, and the rule that picks their stores. Only the
/// thread running a task touches it.
class InboxWriter {
 public:
  /// Plain copies of at least this many bytes are timed (a smaller one is too short to time well),
  /// and only pieces this large are ever streamed under kAuto.
  static constexpr std::size_t kTimedBytes = 32 << 10;
  /// A plain copy below this rate (bytes per ns = GB/s) is slow: between the 2-2.5 GB/s of plain
  /// copies that take each line from the other cache and the 8-30 GB/s of the rest.
  static constexpr double kSlowBytesPerNs = 4.0;
  /// Slow plain copies in a row that switch to streaming. One more than an inbox's slots: the
  /// first large piece into each slot may fault its pages in, and one slow copy alone may be a
  /// preemption.
  static constexpr std::uint32_t kSlowInRow = 5;
  /// Pieces streamed after kSlowInRow slow plain copies, before a plain copy looks again (one
  /// slow look then streams again, so a lasting slow case costs one slow piece in 257).
  static constexpr std::uint32_t kStreamPieces = 256;

  explicit InboxWriter(ShmStores stores = ShmStores::kAuto) : stores_(stores) {}

  /// Copies a piece of n bytes to dst (in the inbox's slot) by the stores the rule picks.
  void write(std::byte* dst, const std::byte* src, std::size_t n);
  /// Whether a piece of n bytes would go by streaming stores now.
  bool streams(std::size_t n) const;
  /// The rule's input, a plain copy of n bytes that took `took` (write() times its own; public so
  /// that tests can feed it times).
  void plain_copy_took(std::size_t n, std::chrono::nanoseconds took);
  /// The rule's other input: a piece streamed.
  void streamed();

 private:
  ShmStores stores_;
  std::uint32_t stream_left_ = 0;  // pieces to stream before the next plain copy looks
  std::uint32_t slow_in_row_ = 0;  // slow plain copies in a row (a run of streaming counts as all but one)
};

}  // namespace ringgrad::collectives
