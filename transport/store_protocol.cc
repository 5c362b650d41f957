// Encoding and checked decoding of the store's requests and responses.

#include "transport/store_protocol.h"

#include <cstring>

#include <fmt/format.h>

#include "transport/error.h"
#include "transport/wire.h"

namespace ringgrad::transport::store_protocol {
namespace {

using wire::get_u16;
using wire::get_u32;
using wire::get_u64;

[[noreturn]] void malformed(const std::string& what) { throw TransportError("malformed store message: " + what); }

// Copies text to out at offset; returns the offset after it.
size_t put(std::vector<std::byte>& out, size_t offset, std::string_view text) {
  if (!text.empty()) std::memcpy(out.data() + offset, text.data(), text.size());
  return offset + text.size();
}

}  // namespace

std::vector<std::byte> encode_request(Op op, std::string_view key, std::string_view value, uint32_t timeout_ms) {
  std::vector<std::byte> bytes(kRequestFixedBytes + key.size() + value.size());
  wire::put_u32(&bytes[0], kMagic);
  wire::put_u16(&bytes[4], static_cast<uint16_t>(op));
  wire::put_u16(&bytes[6], 0);
  wire::put_u32(&bytes[8], static_cast<uint32_t>(key.size()));
  wire::put_u32(&bytes[12], timeout_ms);
  wire::put_u64(&bytes[16], value.size());
  put(bytes, put(bytes, kRequestFixedBytes, key), value);
  return bytes;
}

RequestHeader decode_request_header(std::span<const std::byte, kRequestFixedBytes> bytes) {
  if (get_u32(&bytes[0]) != kMagic) malformed(fmt::format("magic {:#010x}, expected {:#010x}", get_u32(&bytes[0]), kMagic));
  uint16_t op = get_u16(&bytes[4]);
  if (op < static_cast<uint16_t>(Op::hello) || op > static_cast<uint16_t>(Op::wait)) malformed(fmt::format("unknown op {}", op));
  if (get_u16(&bytes[6]) != 0) malformed("reserved field is not 0");
  RequestHeader header{static_cast<Op>(op), get_u32(&bytes[8]), get_u32(&bytes[12]), get_u64(&bytes[16])};
  if (header.key_bytes > kMaxKeyBytes) malformed(fmt::format("key of {} bytes (at most {})", header.key_bytes, kMaxKeyBytes));
  if (header.value_bytes > kMaxValueBytes)
    malformed(fmt::format("value of {} bytes (at most {})", header.value_bytes, kMaxValueBytes));
  return header;
}

Request decode_request(std::span<const std::byte> bytes) {
  if (bytes.size() < kRequestFixedBytes) malformed(fmt::format("{} bytes, shorter than a request header", bytes.size()));
  RequestHeader header = decode_request_header(bytes.first<kRequestFixedBytes>());
  if (bytes.size() - kRequestFixedBytes != header.key_bytes + header.value_bytes)
    malformed(fmt::format("{} bytes after the header, it announces {} + {}", bytes.size() - kRequestFixedBytes,
                          header.key_bytes, header.value_bytes));
  const char* body = reinterpret_cast<const char*>(bytes.data() + kRequestFixedBytes);
  return {header.op, header.timeout_ms, std::string(body, header.key_bytes),
          std::string(body + header.key_bytes, header.value_bytes)};
}

std::vector<std::byte> encode_response(Status status, std::string_view value) {
  std::vector<std::byte> bytes(kResponseFixedBytes + value.size());
  wire::put_u32(&bytes[0], static_cast<uint32_t>(status));
  wire::put_u32(&bytes[4], 0);
  wire::put_u64(&bytes[8], value.size());
  put(bytes, kResponseFixedBytes, value);
  return bytes;
}

ResponseHeader decode_response_header(std::span<const std::byte, kResponseFixedBytes> bytes) {
  uint32_t status = get_u32(&bytes[0]);
  if (status > static_cast<uint32_t>(Status::bad_request)) malformed(fmt::format("unknown status {}", status));
  if (get_u32(&bytes[4]) != 0) malformed("reserved field is not 0");
  ResponseHeader header{static_cast<Status>(status), get_u64(&bytes[8])};
  if (header.value_bytes > kMaxValueBytes)
    malformed(fmt::format("value of {} bytes (at most {})", header.value_bytes, kMaxValueBytes));
  return header;
}

std::string encode_hello_value(const HelloValue& hello) {
  std::string bytes(4, '\0');
  wire::put_u32(reinterpret_cast<std::byte*>(bytes.data()), hello.rank);
  return bytes + hello.token;
}

HelloValue decode_hello_value(std::string_view value) {
  if (value.size() < 4) malformed(fmt::format("a hello value of {} bytes, shorter than a rank", value.size()));
  return {get_u32(reinterpret_cast<const std::byte*>(value.data())), std::string(value.substr(4))};
}

std::string encode_i64(int64_t v) {
  std::string bytes(8, '\0');
  wire::put_u64(reinterpret_cast<std::byte*>(bytes.data()), static_cast<uint64_t>(v));
  return bytes;
}

int64_t decode_i64(std::string_view bytes) {
  if (bytes.size() != 8) malformed(fmt::format("an integer of {} bytes, expected 8", bytes.size()));
  return static_cast<int64_t>(get_u64(reinterpret_cast<const std::byte*>(bytes.data())));
}

}  // namespace ringgrad::transport::store_protocol
