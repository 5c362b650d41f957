// Fuzz targets: parse, and check that what a parser accepts round-trips through its encoder,
// so a parser that reads a field from the wrong place or lets a bound slip is caught.

#include "transport/fuzz/fuzz_targets.h"

#include <cstdlib>
#include <cstring>
#include <span>

#include "transport/error.h"
#include "transport/store_protocol.h"
#include "transport/wire.h"

namespace ringgrad::transport::fuzz {
namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool same(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

}  // namespace

int wire(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        if (in.size() < wire::kFrameHeaderBytes) return 0;
        auto header = wire::decode_frame(in.first<wire::kFrameHeaderBytes>());
        require(same(wire::encode_frame(header), in.first<wire::kFrameHeaderBytes>()));
        break;
      }
      case 1: {
        auto hello = wire::decode_hello(in);
        require(hello.job_id.size() <= wire::kMaxJobIdBytes && hello.token.size() <= wire::kMaxTokenBytes &&
                hello.rank >= 0 && hello.rank < hello.world_size);
        require(same(wire::encode_hello(hello), in));
        break;
      }
      case 2: {
        if (in.size() < wire::kReplyFixedBytes) return 0;
        size_t reason_bytes = 0;
        auto reply = wire::decode_reply_fixed(in.first<wire::kReplyFixedBytes>(), reason_bytes);
        require(reason_bytes <= wire::kMaxReasonBytes && reply.rank >= 0);
        break;
      }
    }
  } catch (const TransportError&) {
    // Refusing bad bytes with an error is the parser's job.
  }
  return 0;
}

int store(const uint8_t* data, size_t size) {
  namespace proto = store_protocol;
  if (size == 0) return 0;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      auto request = proto::decode_request(in);
      require(request.key.size() <= proto::kMaxKeyBytes && request.value.size() <= proto::kMaxValueBytes);
      require(same(proto::encode_request(request.op, request.key, request.value, request.timeout_ms), in));
    } else {
      if (in.size() < proto::kResponseFixedBytes) return 0;
      auto header = proto::decode_response_header(in.first<proto::kResponseFixedBytes>());
      require(header.value_bytes <= proto::kMaxValueBytes);
    }
  } catch (const TransportError&) {
  }
  return 0;
}

}  // namespace ringgrad::transport::fuzz
