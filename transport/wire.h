// The bytes on the wire between two ranks: the 32-byte frame header in front of every message,
// and the hello / reply exchanged once when a rank connects to a peer. Integers are
// little-endian. The parsers check every field and bound every length before anything is
// allocated; they are fuzzed by transport/fuzz and scripts/fuzz_transport.sh.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ringgrad::transport::wire {

// --- Little-endian fields ----------------------------------------------------------------------
inline void put_u16(std::byte* p, uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline void put_u32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline void put_u64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline uint64_t get_le(const std::byte* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
inline uint16_t get_u16(const std::byte* p) { return static_cast<uint16_t>(get_le(p, 2)); }
inline uint32_t get_u32(const std::byte* p) { return static_cast<uint32_t>(get_le(p, 4)); }
inline uint64_t get_u64(const std::byte* p) { return get_le(p, 8); }

// --- Frame header: magic u32 | stream u32 | seq u64 | tag u64 | length u64 ---------------------
constexpr uint32_t kFrameMagic = 0x31464752;  // "RGF1"
constexpr size_t kFrameHeaderBytes = 32;
using FrameBytes = std::array<std::byte, kFrameHeaderBytes>;

/// stream is the communicator the message belongs to (0: the world); seq counts the messages
/// of one direction of one connection from 0; tag is the caller's; length is the payload size
/// in bytes.
struct FrameHeader {
  uint32_t stream = 0;
  uint64_t seq = 0;
  uint64_t tag = 0;
  uint64_t length = 0;
};

FrameBytes encode_frame(const FrameHeader& header);
/// Throws TransportError when the magic is wrong (not a ringgrad stream, or a stream that lost
/// its framing).
FrameHeader decode_frame(std::span<const std::byte, kFrameHeaderBytes> bytes);

// --- Hello (connecting rank -> accepting rank) -------------------------------------------------
// magic u32 | version u16 | job id length u16 | rank u32 | world size u32 | token length u16
// | 0 u16 | job id bytes | token bytes
constexpr uint32_t kHelloMagic = 0x31484752;  // "RGH1"
constexpr uint16_t kVersion = 3;  // 2: frame headers carry the stream; 3: the hello carries the job token
constexpr size_t kHelloFixedBytes = 20;
constexpr size_t kMaxJobIdBytes = 256;
constexpr size_t kMaxTokenBytes = 256;  // the longest job token a rank may carry

struct Hello {
  int rank = 0;
  int world_size = 0;
  std::string job_id;
  std::string token;  // the job token (job_token.h)
};

std::vector<std::byte> encode_hello(const Hello& hello);
/// Parses the fixed part; the returned Hello has an empty job_id and token, and `job_id_bytes`
/// and `token_bytes` (each within its bound) say how many bytes of each follow, job id first.
/// Throws TransportError on a bad magic, version, length, reserved field, rank or world size.
Hello decode_hello_fixed(std::span<const std::byte, kHelloFixedBytes> bytes, size_t& job_id_bytes, size_t& token_bytes);
/// Parses a whole hello (fixed part and job id), as one buffer. Throws as above, and when the
/// buffer's size does not match.
Hello decode_hello(std::span<const std::byte> bytes);

// --- Reply (accepting rank -> connecting rank) -------------------------------------------------
// magic u32 | accepted u32 (1 or 0) | rank u32 | reason length u32 | reason bytes
constexpr uint32_t kReplyMagic = 0x31524752;  // "RGR1"
constexpr size_t kReplyFixedBytes = 16;
constexpr size_t kMaxReasonBytes = 512;

struct Reply {
  bool accepted = false;
  int rank = 0;        // the accepting rank
  std::string reason;  // why it refused
};

std::vector<std::byte> encode_reply(const Reply& reply);
Reply decode_reply_fixed(std::span<const std::byte, kReplyFixedBytes> bytes, size_t& reason_bytes);

}  // namespace ringgrad::transport::wire
