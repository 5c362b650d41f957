// Encoding and checked decoding of the frame header, the hello and the reply.

#include "transport/wire.h"

#include <algorithm>

#include <fmt/format.h>

#include "transport/error.h"

namespace ringgrad::transport::wire {
namespace {

constexpr uint32_t kMaxWorldSize = 1u << 20;

[[noreturn]] void malformed(const std::string& what) { throw TransportError("malformed " + what); }

}  // namespace

FrameBytes encode_frame(const FrameHeader& header) {
  FrameBytes bytes{};
  put_u32(&bytes[0], kFrameMagic);
  put_u32(&bytes[4], header.stream);
  put_u64(&bytes[8], header.seq);
  put_u64(&bytes[16], header.tag);
  put_u64(&bytes[24], header.length);
  return bytes;
}

FrameHeader decode_frame(std::span<const std::byte, kFrameHeaderBytes> bytes) {
  if (get_u32(&bytes[0]) != kFrameMagic)
    malformed(fmt::format("message header: magic {:#010x}, expected {:#010x}", get_u32(&bytes[0]), kFrameMagic));
  return {get_u32(&bytes[4]), get_u64(&bytes[8]), get_u64(&bytes[16]), get_u64(&bytes[24])};
}

std::vector<std::byte> encode_hello(const Hello& hello) {
  std::vector<std::byte> bytes(kHelloFixedBytes + hello.job_id.size() + hello.token.size());
  put_u32(&bytes[0], kHelloMagic);
  put_u16(&bytes[4], kVersion);
  put_u16(&bytes[6], static_cast<uint16_t>(hello.job_id.size()));
  put_u32(&bytes[8], static_cast<uint32_t>(hello.rank));
  put_u32(&bytes[12], static_cast<uint32_t>(hello.world_size));
  put_u16(&bytes[16], static_cast<uint16_t>(hello.token.size()));
  put_u16(&bytes[18], 0);
  std::byte* out = bytes.data() + kHelloFixedBytes;
  for (char c : hello.job_id) *out++ = static_cast<std::byte>(c);
  for (char c : hello.token) *out++ = static_cast<std::byte>(c);
  return bytes;
}

Hello decode_hello_fixed(std::span<const std::byte, kHelloFixedBytes> bytes, size_t& job_id_bytes, size_t& token_bytes) {
  if (get_u32(&bytes[0]) != kHelloMagic) malformed("hello: not a ringgrad peer (bad magic)");
  if (get_u16(&bytes[4]) != kVersion)
    malformed(fmt::format("hello: protocol version {}, this build speaks {}", get_u16(&bytes[4]), kVersion));
  job_id_bytes = get_u16(&bytes[6]);
  if (job_id_bytes > kMaxJobIdBytes) malformed(fmt::format("hello: job id of {} bytes (at most {})", job_id_bytes, kMaxJobIdBytes));
  token_bytes = get_u16(&bytes[16]);
  if (token_bytes > kMaxTokenBytes) malformed(fmt::format("hello: job token of {} bytes (at most {})", token_bytes, kMaxTokenBytes));
  if (get_u16(&bytes[18]) != 0) malformed("hello: reserved field is not 0");
  uint32_t rank = get_u32(&bytes[8]), world_size = get_u32(&bytes[12]);
  if (world_size == 0 || world_size > kMaxWorldSize || rank >= world_size)
    malformed(fmt::format("hello: rank {} of world size {}", rank, world_size));
  return {static_cast<int>(rank), static_cast<int>(world_size), {}, {}};
}

Hello decode_hello(std::span<const std::byte> bytes) {
  if (bytes.size() < kHelloFixedBytes) malformed(fmt::format("hello: {} bytes, shorter than its fixed part", bytes.size()));
  size_t job_id_bytes = 0, token_bytes = 0;
  Hello hello = decode_hello_fixed(bytes.first<kHelloFixedBytes>(), job_id_bytes, token_bytes);
  if (bytes.size() != kHelloFixedBytes + job_id_bytes + token_bytes)
    malformed(fmt::format("hello: {} bytes, its header says {}", bytes.size(), kHelloFixedBytes + job_id_bytes + token_bytes));
  const char* rest = reinterpret_cast<const char*>(bytes.data() + kHelloFixedBytes);
  hello.job_id.assign(rest, job_id_bytes);
  hello.token.assign(rest + job_id_bytes, token_bytes);
  return hello;
}

std::vector<std::byte> encode_reply(const Reply& reply) {
  const size_t reason_bytes = std::min(reply.reason.size(), kMaxReasonBytes);
  std::vector<std::byte> bytes(kReplyFixedBytes + reason_bytes);
  put_u32(&bytes[0], kReplyMagic);
  put_u32(&bytes[4], reply.accepted ? 1 : 0);
  put_u32(&bytes[8], static_cast<uint32_t>(reply.rank));
  put_u32(&bytes[12], static_cast<uint32_t>(reason_bytes));
  for (size_t i = 0; i < reason_bytes; ++i) bytes[kReplyFixedBytes + i] = static_cast<std::byte>(reply.reason[i]);
  return bytes;
}

Reply decode_reply_fixed(std::span<const std::byte, kReplyFixedBytes> bytes, size_t& reason_bytes) {
  if (get_u32(&bytes[0]) != kReplyMagic) malformed("reply: not a ringgrad peer (bad magic)");
  uint32_t accepted = get_u32(&bytes[4]);
  if (accepted > 1) malformed(fmt::format("reply: accepted = {}", accepted));
  reason_bytes = get_u32(&bytes[12]);
  if (reason_bytes > kMaxReasonBytes) malformed(fmt::format("reply: reason of {} bytes (at most {})", reason_bytes, kMaxReasonBytes));
  uint32_t rank = get_u32(&bytes[8]);
  if (rank >= kMaxWorldSize) malformed(fmt::format("reply: rank {}", rank));
  return {accepted == 1, static_cast<int>(rank), {}};
}

}  // namespace ringgrad::transport::wire
