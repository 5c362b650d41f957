// Local validation of one rank's call: root, contiguity, null pointers, sizes that fit memory,
// device memory that is what it claims, matching counts and dtypes, and send/recv overlap.
#include "collectives/validate.h"

#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "collectives/device_check.h"

namespace ringgrad::collectives {
namespace {

// count elements of `dtype` must be a byte count memory can hold: larger ones would wrap.
std::string fits_memory(const char* name, std::size_t count, DType dtype) {
  constexpr std::size_t kLargestElement = 8;  // no division on the way of every small call
  if (count <= static_cast<std::size_t>(PTRDIFF_MAX) / kLargestElement) return {};
  if (count <= static_cast<std::size_t>(PTRDIFF_MAX) / dtype_size(dtype)) return {};
  return fmt::format("{} holds {} elements of {}: more than {} bytes, which no buffer can hold", name, count,
                     dtype_name(dtype), PTRDIFF_MAX);
}

std::string contiguous(const char* name, std::ptrdiff_t stride) {
  if (stride == 1) return {};
  return fmt::format("{} buffer is not contiguous (stride {} elements); collectives need stride 1: "
                     "make a contiguous copy first", name, stride);
}

// Same memory (in place at `inplace_offset` bytes of the larger buffer), or no overlap at all.
std::string overlap(const void* small, std::size_t small_bytes, const void* large, std::size_t large_bytes,
                    std::size_t inplace_offset) {
  const auto s = reinterpret_cast<std::uintptr_t>(small), l = reinterpret_cast<std::uintptr_t>(large);
  if (small_bytes == 0 || large_bytes == 0 || s == l + inplace_offset) return {};
  if (s + small_bytes <= l || l + large_bytes <= s) return {};
  return fmt::format("send and recv overlap without being in place (in place means the smaller buffer "
                     "starts {} bytes into the larger)", inplace_offset);
}

}  // namespace

bool uses_send(CollKind k, int rank, int root) {
  return (k != CollKind::kBroadcast && k != CollKind::kScatter) || rank == root;
}
bool uses_recv(CollKind k, int rank, int root) {
  return (k != CollKind::kReduce && k != CollKind::kGather) || rank == root;
}

int call_device(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank) {
  return uses_recv(kind, rank, root) ? recv.device : send.device;
}

std::string validate(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank, int p) {
  if (has_root(kind) && (root < 0 || root >= p))
    return fmt::format("root {} is not a rank of this world of {}", root, p);
  const bool sends = uses_send(kind, rank, root), receives = uses_recv(kind, rank, root);
  if (sends) {
    if (auto e = contiguous("send", send.stride); !e.empty()) return e;
    if (send.data == nullptr && send.count > 0) return "send buffer is null";
    if (auto e = fits_memory("send", send.count, send.dtype); !e.empty()) return e;
    if (auto e = check_memory("send", send.data, send.count, send.device); !e.empty()) return e;
  }
  if (receives) {
    if (auto e = contiguous("recv", recv.stride); !e.empty()) return e;
    if (recv.data == nullptr && recv.count > 0) return "recv buffer is null";
    if (auto e = fits_memory("recv", recv.count, recv.dtype); !e.empty()) return e;
    if (auto e = check_memory("recv", recv.data, recv.count, recv.device); !e.empty()) return e;
  }
  if (!sends || !receives) return {};
  if (send.device != recv.device)
    return fmt::format("send is in {} but recv is in {}: one call takes host buffers or buffers of one device",
                       memory_name(send.device), memory_name(recv.device));
  if (send.dtype != recv.dtype)
    return fmt::format("send is {} but recv is {}", dtype_name(send.dtype), dtype_name(recv.dtype));
  const std::size_t es = dtype_size(send.dtype), P = static_cast<std::size_t>(p), R = static_cast<std::size_t>(rank);
  switch (kind) {
    case CollKind::kAllGather:
    case CollKind::kGather:
      if (recv.count % P != 0 || recv.count / P != send.count)  // not send.count * P, which may wrap
        return fmt::format("recv holds {} elements, {} needs send count {} x world size {} = {}", recv.count,
                           coll_name(kind), send.count, p, send.count * P);
      return overlap(send.data, send.count * es, recv.data, recv.count * es, R * send.count * es);
    case CollKind::kReduceScatter:
    case CollKind::kScatter:
      if (send.count % P != 0 || send.count / P != recv.count)
        return fmt::format("send holds {} elements, {} needs recv count {} x world size {} = {}", send.count,
                           coll_name(kind), recv.count, p, recv.count * P);
      return overlap(recv.data, recv.count * es, send.data, send.count * es, R * recv.count * es);
    case CollKind::kAllToAll:
      if (send.count % P != 0)
        return fmt::format("send holds {} elements, not a multiple of the world size {} (all_to_all sends "
                           "count / {} to each rank)", send.count, p, p);
      if (send.count != recv.count)
        return fmt::format("send holds {} elements but recv holds {}", send.count, recv.count);
      return overlap(send.data, send.count * es, recv.data, recv.count * es, 0);
    default:
      if (send.count != recv.count)
        return fmt::format("send holds {} elements but recv holds {}", send.count, recv.count);
      return overlap(send.data, send.count * es, recv.data, recv.count * es, 0);
  }
}

}  // namespace ringgrad::collectives
