// Piggyback: the call's data in its argument check's message (piggyback.h). One framed exchange
// with every peer, then the call finishes on this rank: a reduction or copies into place.
#include "collectives/algorithms/piggyback.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <span>

namespace ringgrad::collectives {
namespace {

// piggyback_bytes() given piggybacks(h, block): a broadcast's non-roots send nothing.
std::size_t bytes_from(const CallHeader& h, std::size_t block, int sender) {
  return static_cast<CollKind>(h.kind) == CollKind::kBroadcast && sender != h.root ? 0 : block;
}

// What a rank sends peer `to`: its send buffer, or in all-to-all its block for `to`.
const std::byte* data_for(const CallHeader& h, std::size_t block, const std::byte* send, int to) {
  if (static_cast<CollKind>(h.kind) != CollKind::kAllToAll) return send;
  return send + static_cast<std::size_t>(to) * block;
}

// The call once every peer's data is here: `from[q]` is what rank q sent (null: nothing), each
// a block of `bytes`.
void finish(Link& link, CollKind kind, const CollArgs& a, std::size_t bytes, std::span<const std::byte* const> from,
            std::byte* scratch) {
  switch (kind) {
    case CollKind::kAllReduce: return reduce_in_rank_order(link, from, a.recv, a.count, a.dtype, a.op, scratch);
    case CollKind::kBroadcast: return link.copy(a.recv, from[static_cast<std::size_t>(a.root)], bytes);
    default:  // all-gather and all-to-all: rank q's block lands in block q (in place, ours is there already)
      for (std::size_t q = 0; q < from.size(); ++q) link.copy(a.recv + q * bytes, from[q], bytes);
  }
}

}  // namespace

bool piggybacks(const CallHeader& h, std::size_t block) {
  const auto kind = static_cast<CollKind>(h.kind);
  const bool whole = (kind == CollKind::kAllReduce && static_cast<Algo>(h.algo) == Algo::kOneShot) ||
                     kind == CollKind::kAllGather || kind == CollKind::kBroadcast || kind == CollKind::kAllToAll;
  return whole && h.invalid == 0 && h.on_device == 0 && h.by_mpi == 0 && block > 0 &&
         block <= std::min<std::size_t>(h.chunk_bytes, kPiggybackMaxBytes);
}

std::size_t piggyback_bytes(const CallHeader& h, int sender) {
  const std::size_t block = h.count * dtype_size(static_cast<DType>(h.dtype));
  return piggybacks(h, block) ? bytes_from(h, block, sender) : 0;
}

std::string piggyback(Link& link, const Descriptor& mine, const CollArgs& args, std::size_t block,
                      std::vector<CallHeader>& heads, std::vector<const std::byte*>& bodies) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t out_bytes = bytes_from(mine.head, block, r);
  // One slot per sender for the body it sends this rank; this rank's own slot is the reduction's
  // scratch.
  std::byte* slots = link.workspace(static_cast<std::size_t>(p) * block);
  std::vector<std::byte> dropped;
  heads.assign(static_cast<std::size_t>(p), mine.head);
  for (int s = 1; s < p; ++s) {
    const int to = (r + s) % p, from = (r - s + p) % p;
    CallHeader out = mine.head;  // up to kHeaderData bytes inside it, more as a body behind it
    std::span<const std::byte> body;
    if (out_bytes > kHeaderData) {
      body = {data_for(mine.head, block, args.send, to), out_bytes};
      const std::uint64_t length = out_bytes;
      out.has_body = 1;
      std::memcpy(out.data, &length, sizeof length);
    } else if (out_bytes > 0) {
      std::memcpy(out.data, data_for(mine.head, block, args.send, to), out_bytes);
    }
    CallHeader& theirs = heads[static_cast<std::size_t>(from)];
    // The body's length is read off the sender's header. One that differs from what this rank
    // expects (the headers will not agree) is read and dropped, so the link stays in step.
    const auto body_for = [&](std::span<const std::byte> /*head, received into theirs*/) {
      const std::size_t n = body_bytes(theirs);
      if (n == 0) return std::span<std::byte>();
      if (n == bytes_from(mine.head, block, from)) return std::span<std::byte>(slots + static_cast<std::size_t>(from) * block, n);
      dropped.resize(n);
      return std::span<std::byte>(dropped);
    };
    // By reference: a std::function holding the lambda itself would allocate on every call.
    link.send_recv_framed(to, std::as_bytes(std::span(&out, 1)), body, from, std::as_writable_bytes(std::span(&theirs, 1)),
                          std::cref(body_for));
  }
  if (headers_agree(heads)) {
    bodies.assign(static_cast<std::size_t>(p), nullptr);
    for (int q = 0; q < p; ++q) {  // every header is mine but for its data: what q sent is what mine says
      const std::size_t n = bytes_from(mine.head, block, q);
      const std::byte* data = q == r ? data_for(mine.head, block, args.send, r)
                              : n <= kHeaderData ? heads[static_cast<std::size_t>(q)].data
                                                 : slots + static_cast<std::size_t>(q) * block;
      bodies[static_cast<std::size_t>(q)] = n > 0 ? data : nullptr;
    }
    finish(link, static_cast<CollKind>(mine.head.kind), args, block, bodies, slots + static_cast<std::size_t>(r) * block);
    return {};
  }
  return disagreement(link, mine);  // the same message on every rank
}

}  // namespace ringgrad::collectives
