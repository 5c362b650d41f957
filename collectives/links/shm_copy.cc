// Plain or streaming stores into an inbox (shm_copy.h): the streaming copy, and the rule.
#include "collectives/links/shm_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ringgrad::collectives {

void copy_streaming(std::byte* dst, const std::byte* src, std::size_t n) {
#if defined(__SSE2__)
  // Whole lines (four 16-byte stores each), so that each line's stores fill one write-combining
  // buffer; the bytes before dst's first line boundary and the tail under a line go by memcpy.
  std::size_t i = std::min<std::size_t>(n, (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64);
  std::memcpy(dst, src, i);
  for (; i + 64 <= n; i += 64) {
    for (std::size_t k = 0; k < 64; k += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + k));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + k), v);
    }
  }
  std::memcpy(dst + i, src + i, n - i);
  _mm_sfence();  // streaming stores are weakly ordered: all of them before the caller's release store
#else
  std::memcpy(dst, src, n);
#endif
}

bool InboxWriter::streams(std::size_t n) const {
  switch (stores_) {
    case ShmStores::kPlain: return false;
    case ShmStores::kStreaming: return true;
    case ShmStores::kAuto: break;
  }
  return stream_left_ > 0 && n >= kTimedBytes;
}

void InboxWriter::write(std::byte* dst, const std::byte* src, std::size_t n) {
  if (streams(n)) {
    copy_streaming(dst, src, n);
    streamed();
  } else if (stores_ == ShmStores::kAuto && n >= kTimedBytes) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(dst, src, n);
    plain_copy_took(n, std::chrono::steady_clock::now() - start);
  } else {
    std::memcpy(dst, src, n);
  }
}

void InboxWriter::plain_copy_took(std::size_t n, std::chrono::nanoseconds took) {
  if (stores_ != ShmStores::kAuto || n < kTimedBytes) return;
  const bool slow = static_cast<double>(n) < kSlowBytesPerNs * static_cast<double>(took.count());
  slow_in_row_ = slow ? slow_in_row_ + 1 : 0;
  if (slow_in_row_ >= kSlowInRow) {
    stream_left_ = kStreamPieces;
    slow_in_row_ = 0;
  }
}

void InboxWriter::streamed() {
  if (stores_ == ShmStores::kAuto && stream_left_ > 0 && --stream_left_ == 0)
    slow_in_row_ = kSlowInRow - 1;  // so that one slow look streams again
}

}  // namespace ringgrad::collectives
