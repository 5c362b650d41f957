// The rendezvous store's messages. A client sends a request and reads one response; the first
// request on a connection must be a hello carrying the job id and the job token (job_token.h).
// Integers are little-endian.
//   request:  magic u32 | op u16 | 0 u16 | key length u32 | timeout ms u32 | value length u64
//             | key bytes | value bytes
//   response: status u32 | 0 u32 | value length u64 | value bytes
// Lengths are bounded (kMaxKeyBytes, kMaxValueBytes) before anything is allocated; the parsers
// are fuzzed by transport/fuzz and scripts/fuzz_transport.sh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ringgrad::transport::store_protocol {

constexpr uint32_t kMagic = 0x31534752;  // "RGS1"
constexpr size_t kRequestFixedBytes = 24;
constexpr size_t kResponseFixedBytes = 16;
constexpr size_t kMaxKeyBytes = 4096;
constexpr uint64_t kMaxValueBytes = uint64_t{64} << 20;

enum class Op : uint16_t {
  hello = 1,  // key = job id, value = rank u32 (for the server's log) | job token bytes
  set = 2,    // key, value
  get = 3,    // key; waits up to timeout_ms for the key; response value = the value
  add = 4,    // key, value = 8-byte delta; response value = 8-byte new total
  wait = 5,   // key; waits up to timeout_ms for the key; empty response value
};

enum class Status : uint32_t {
  ok = 0,
  timeout = 1,      // the key was not set within the request's timeout
  refused = 2,      // hello without the job's token, or from another job; value = the reason
  bad_request = 3,  // value = the reason
};

struct RequestHeader {
  Op op = Op::hello;
  uint32_t key_bytes = 0;
  uint32_t timeout_ms = 0;
  uint64_t value_bytes = 0;
};

struct Request {
  Op op = Op::hello;
  uint32_t timeout_ms = 0;
  std::string key;
  std::string value;
};

struct ResponseHeader {
  Status status = Status::ok;
  uint64_t value_bytes = 0;
};

std::vector<std::byte> encode_request(Op op, std::string_view key, std::string_view value, uint32_t timeout_ms);
/// Throws TransportError on a bad magic, op or reserved field, or a key or value over its bound.
RequestHeader decode_request_header(std::span<const std::byte, kRequestFixedBytes> bytes);
/// Parses a whole request from one buffer (header, key, value); throws as above and when the
/// buffer's size does not match the header.
Request decode_request(std::span<const std::byte> bytes);

std::vector<std::byte> encode_response(Status status, std::string_view value);
ResponseHeader decode_response_header(std::span<const std::byte, kResponseFixedBytes> bytes);

struct HelloValue {
  uint32_t rank = 0;
  std::string token;
};
std::string encode_hello_value(const HelloValue& hello);
/// Throws TransportError when the value is shorter than the rank.
HelloValue decode_hello_value(std::string_view value);

std::string encode_i64(int64_t v);
int64_t decode_i64(std::string_view bytes);  // throws TransportError unless exactly 8 bytes

}  // namespace ringgrad::transport::store_protocol
