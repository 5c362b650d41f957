// Local validation of one rank's call: root, contiguity, null pointers, sizes that fit memory,
// matching devices, dtypes and counts, send/recv overlap, then device memory that is what it
// claims.
#include "collectives/validate.h"

#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "collectives/device_check.h"
#include "collectives/enum_format.h"

namespace ringgrad::collectives {
namespace {

// Why buffer `name` is unusable on its own (stride, null, a size no memory holds), or empty.
std::string unusable(const char* name, const void* data, std::size_t count, std::ptrdiff_t stride, DType dtype,
                     std::size_t elem_bytes) {
  if (stride != 1)
    return fmt::format("{} buffer is not contiguous (stride {} elements); collectives need stride 1: "
                       "make a contiguous copy first", name, stride);
  if (data == nullptr && count > 0) return fmt::format("{} buffer is null", name);
  // Larger counts would wrap as bytes. The first test, against the largest element (8 bytes),
  // spares every ordinary call a division.
  if (count > static_cast<std::size_t>(PTRDIFF_MAX) / 8 && count > static_cast<std::size_t>(PTRDIFF_MAX) / elem_bytes)
    return fmt::format("{} holds {} elements of {}: more than {} bytes, which no buffer can hold", name, count,
                       dtype, PTRDIFF_MAX);
  return {};
}

}  // namespace

std::string validate(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank, int p,
                     std::size_t elem_bytes) {
  if (has_root(kind) && (root < 0 || root >= p))
    return fmt::format("root {} is not a rank of this world of {}", root, p);
  const bool sends = uses_send(kind, rank, root), receives = uses_recv(kind, rank, root);
  // One buffer in use is the one that gives the call its dtype; two must agree on it.
  if (sends && receives && send.dtype != recv.dtype)
    return fmt::format("send is {} but recv is {}", send.dtype, recv.dtype);
  if (auto e = sends ? unusable("send", send.data, send.count, send.stride, send.dtype, elem_bytes) : "";
      !e.empty())
    return e;
  if (auto e = receives ? unusable("recv", recv.data, recv.count, recv.stride, recv.dtype, elem_bytes) : "";
      !e.empty())
    return e;
  if (sends && receives) {
    if (send.device != recv.device)
      return fmt::format("send is in {} but recv is in {}: one call takes host buffers or buffers of one device",
                         memory_name(send.device), memory_name(recv.device));
    // The counts, and where the smaller buffer sits in the larger when the call is in place.
    const std::size_t P = static_cast<std::size_t>(p), R = static_cast<std::size_t>(rank);
    const void *small = send.data, *large = recv.data;
    std::size_t small_count = send.count, large_count = recv.count, in_place_at = 0;  // elements
    switch (kind) {
      case CollKind::kAllGather:
      case CollKind::kGather:
        if (recv.count % P != 0 || recv.count / P != send.count)  // not send.count * P, which may wrap
          return fmt::format("recv holds {} elements, {} needs send count {} x world size {} = {}", recv.count,
                             kind, send.count, p, send.count * P);
        in_place_at = R * send.count;
        break;
      case CollKind::kReduceScatter:
      case CollKind::kScatter:
        if (send.count % P != 0 || send.count / P != recv.count)
          return fmt::format("send holds {} elements, {} needs recv count {} x world size {} = {}", send.count,
                             kind, recv.count, p, recv.count * P);
        small = recv.data, large = send.data, small_count = recv.count, large_count = send.count;
        in_place_at = R * recv.count;
        break;
      case CollKind::kAllToAll:
        if (send.count % P != 0)
          return fmt::format("send holds {} elements, not a multiple of the world size {} (all_to_all sends "
                             "count / {} to each rank)", send.count, p, p);
        [[fallthrough]];
      default:
        if (send.count != recv.count)
          return fmt::format("send holds {} elements but recv holds {}", send.count, recv.count);
    }
    // In place (the same memory), or no overlap at all.
    const auto s = reinterpret_cast<std::uintptr_t>(small), l = reinterpret_cast<std::uintptr_t>(large);
    const std::size_t s_bytes = small_count * elem_bytes, l_bytes = large_count * elem_bytes;
    if (s_bytes > 0 && l_bytes > 0 && s != l + in_place_at * elem_bytes && s < l + l_bytes && l < s + s_bytes)
      return fmt::format("send and recv overlap without being in place (in place means the smaller buffer "
                         "starts {} bytes into the larger)", in_place_at * elem_bytes);
  }
  // Device memory that is what it claims, last: it asks the CUDA runtime.
  if (auto e = sends && send.device != kHost ? check_memory("send", send.data, send.count, send.device) : "";
      !e.empty())
    return e;
  if (receives && recv.device != kHost) return check_memory("recv", recv.data, recv.count, recv.device);
  return {};
}

}  // namespace ringgrad::collectives
