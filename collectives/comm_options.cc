// CommOptions from the environment: each variable is digits only (or a name), and a value out
// of range is an error naming the variable, never silently clamped or wrapped.
#include "collectives/comm_options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace ringgrad::collectives {

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  // Digits only: strtoull alone would take "-8" (as 2^64 - 8) and a leading space or '+'.
  if (std::strspn(v, "0123456789") != std::strlen(v))
    throw std::invalid_argument(fmt::format("{}='{}' is not a whole number", name, v));
  errno = 0;
  const unsigned long long x = std::strtoull(v, nullptr, 10);
  if (errno == ERANGE) throw std::invalid_argument(fmt::format("{}={} is too large", name, v));
  return static_cast<std::size_t>(x);
}

namespace {

// A switch: 0 (off) or 1 (on); 2 is more likely a typo than "very on".
bool env_switch(const char* name, bool fallback) {
  const std::size_t v = env_size(name, fallback ? 1 : 0);
  if (v > 1) throw std::invalid_argument(fmt::format("{}={} must be 0 (off) or 1 (on)", name, v));
  return v == 1;
}

// Pieces below 4 KiB cost more in per-piece work than they move, and the argument check's
// 256-byte descriptor must fit a shared-memory inbox; above 1 GiB an inbox would not fit memory.
constexpr std::size_t kMinChunk = 4 << 10, kMaxChunk = std::size_t{1} << 30;

void check_chunk(const char* what, std::size_t bytes) {
  if (bytes < kMinChunk || bytes > kMaxChunk || bytes % 8 != 0)
    throw std::invalid_argument(fmt::format("{}={} must be a multiple of 8 from {} to {}", what, bytes, kMinChunk, kMaxChunk));
}

}  // namespace

CommOptions CommOptions::from_env() {
  CommOptions o;
  o.check_args = env_switch("RINGGRAD_CHECK", true);
  if (const char* a = std::getenv("RINGGRAD_ALGO"); a != nullptr && *a != '\0') {
    try {
      o.algo = parse_algo(a);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("RINGGRAD_ALGO: {}", e.what()));
    }
  }
  o.chunk_bytes = env_size("RINGGRAD_CHUNK_BYTES", o.chunk_bytes);
  check_chunk("RINGGRAD_CHUNK_BYTES", o.chunk_bytes);
  o.model.chunk_bytes = o.chunk_bytes;
  if (const char* b = std::getenv("RINGGRAD_BACKEND"); b != nullptr && *b != '\0') {
    try {
      o.backend = parse_backend(b);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("RINGGRAD_BACKEND: {}", e.what()));
    }
  }
  o.shared_memory = env_switch("RINGGRAD_SHM", true);
  if (const char* v = std::getenv("RINGGRAD_SHM_LINK"); v != nullptr && *v != '\0') {
    if (std::strcmp(v, "fast") == 0) o.shm_link = ShmLinkKind::kFast;
    else if (std::strcmp(v, "plain") == 0) o.shm_link = ShmLinkKind::kPlain;
    else throw std::invalid_argument(fmt::format("RINGGRAD_SHM_LINK='{}' must be fast or plain", v));
  }
  if (const char* v = std::getenv("RINGGRAD_SHM_POLL_US"); v != nullptr && *v != '\0') {
    const std::size_t us = env_size("RINGGRAD_SHM_POLL_US", 0);
    if (us > 1'000'000) throw std::invalid_argument(fmt::format("RINGGRAD_SHM_POLL_US={} must be from 0 to 1000000 (1 s)", us));
    o.shm_poll = std::chrono::microseconds(us);
  }
  if (const char* v = std::getenv("RINGGRAD_SHM_STREAM"); v != nullptr && *v != '\0')
    o.shm_stores = env_switch("RINGGRAD_SHM_STREAM", false) ? ShmStores::kStreaming : ShmStores::kPlain;
  o.device_chunk_bytes = env_size("RINGGRAD_DEVICE_CHUNK_BYTES", o.device_chunk_bytes);
  check_chunk("RINGGRAD_DEVICE_CHUNK_BYTES", o.device_chunk_bytes);
  return o;
}

void CommOptions::validate() const {
  check_chunk("chunk_bytes", chunk_bytes);
  check_chunk("device_chunk_bytes", device_chunk_bytes);
}

}  // namespace ringgrad::collectives
