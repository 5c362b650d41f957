// Local validation of a call's buffers, the cross-rank comparison of call descriptors, and
// the one-time comparison of whether the check is on.
#include "collectives/check.h"

#include "collectives/collective_error.h"
#include "collectives/device_check.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>

#include <fmt/format.h>

namespace ringgrad::collectives {
namespace {

bool has_op(CollKind k) {
  return k == CollKind::kReduce || k == CollKind::kAllReduce || k == CollKind::kReduceScatter;
}
bool has_root(CollKind k) {
  return k == CollKind::kBroadcast || k == CollKind::kReduce || k == CollKind::kGather || k == CollKind::kScatter;
}
// Which buffers rank `rank` uses: the root alone sends in broadcast and scatter, and alone
// receives in reduce and gather.
bool uses_send(CollKind k, int rank, int root) {
  return (k != CollKind::kBroadcast && k != CollKind::kScatter) || rank == root;
}
bool uses_recv(CollKind k, int rank, int root) {
  return (k != CollKind::kReduce && k != CollKind::kGather) || rank == root;
}

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

namespace {

// The call's block of count elements (per peer, in all-to-all): bytes.
std::size_t block_bytes(const CallHeader& h) { return h.count * dtype_size(static_cast<DType>(h.dtype)); }

// ride_bytes() given data_rides(h) and block_bytes(h).
std::size_t ride_bytes_of(const CallHeader& h, std::size_t block, int sender) {
  return static_cast<CollKind>(h.kind) == CollKind::kBroadcast && sender != h.root ? 0 : block;
}

}  // namespace

bool data_rides(const CallHeader& h) {
  const auto kind = static_cast<CollKind>(h.kind);
  const bool whole = (kind == CollKind::kAllReduce && static_cast<Algo>(h.algo) == Algo::kOneShot) ||
                     kind == CollKind::kAllGather || kind == CollKind::kBroadcast || kind == CollKind::kAllToAll;
  const std::size_t bytes = block_bytes(h);
  return whole && h.invalid == 0 && h.on_device == 0 && h.by_mpi == 0 && bytes > 0 &&
         bytes <= std::min<std::size_t>(h.chunk_bytes, kRideMaxBytes);
}

std::size_t ride_bytes(const CallHeader& h, int sender) {
  return data_rides(h) ? ride_bytes_of(h, block_bytes(h), sender) : 0;
}

const std::byte* ride_data(const CallHeader& h, const std::byte* send, int to) {
  if (static_cast<CollKind>(h.kind) != CollKind::kAllToAll) return send;
  return send + static_cast<std::size_t>(to) * block_bytes(h);
}

Descriptor describe_call(CollKind kind, uint64_t seq, const CollArgs& args, Algo algo, std::size_t chunk_bytes,
                         bool on_device, bool by_mpi, const std::string& invalid) {
  Descriptor d;
  std::memset(&d, 0, sizeof d);  // the padding too: headers are compared byte for byte
  CallHeader& h = d.head;
  h.seq = seq;
  h.count = args.count;
  h.chunk_bytes = static_cast<uint32_t>(chunk_bytes);
  h.root = has_root(kind) ? args.root : -1;
  h.kind = static_cast<uint8_t>(kind);
  h.dtype = kind == CollKind::kBarrier ? 0 : static_cast<uint8_t>(args.dtype);
  h.op = has_op(kind) ? static_cast<uint8_t>(args.op) : 255;
  h.algo = static_cast<uint8_t>(algo);
  h.on_device = on_device ? 1 : 0;
  h.invalid = invalid.empty() ? 0 : 1;
  h.by_mpi = by_mpi ? 1 : 0;
  std::memcpy(d.reason, invalid.data(), std::min(invalid.size(), sizeof d.reason - 1));
  return d;
}

namespace {

// Every rank's `mine`, indexed by rank. Pairwise, step s: to r+s, from r-s. Each step is one
// send_recv, which every link runs on this thread with no hand-off (over TCP a hand-off to the
// progress thread and back cost more than the messages).
template <typename T>
std::vector<T> exchange_all(Link& link, const T& mine) {
  const int p = link.world_size(), r = link.rank();
  std::vector<T> all(static_cast<std::size_t>(p));
  all[static_cast<std::size_t>(r)] = mine;
  for (int s = 1; s < p; ++s) {
    const int from = (r - s + p) % p;
    link.send_recv((r + s) % p, &mine, sizeof(T), from, &all[static_cast<std::size_t>(from)], sizeof(T));
  }
  return all;
}

// Every rank's header, each with what its sender sends this rank (ride_bytes()): inside the
// header when it fits, else a body behind it, read into slot `from` of `slots` when it is as long
// as this rank's own header says it should be. A peer whose body differs in length (the headers
// will not agree) has it read into `discard`, so the link stays in step for the descriptors.
void exchange_heads(Link& link, const CallHeader& mine, const std::byte* send, std::byte* slots, std::size_t block,
                    std::vector<CallHeader>& heads) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t out_bytes = block > 0 ? ride_bytes_of(mine, block, r) : 0;
  std::vector<std::byte> discard;
  heads.assign(static_cast<std::size_t>(p), mine);
  for (int s = 1; s < p; ++s) {
    const int to = (r + s) % p, from = (r - s + p) % p;
    CallHeader out = mine;  // all-to-all sends each peer its own block
    std::span<const std::byte> body;
    if (out_bytes > kHeaderData) body = {ride_data(mine, send, to), out_bytes};
    else if (out_bytes > 0) std::memcpy(out.data, ride_data(mine, send, to), out_bytes);
    CallHeader& theirs = heads[static_cast<std::size_t>(from)];
    const auto body_for = [&](std::span<const std::byte> /*head, received into theirs*/) {
      const std::size_t n = ride_bytes(theirs, from);
      if (n <= kHeaderData) return std::span<std::byte>();
      if (block > 0 && n == ride_bytes_of(mine, block, from))
        return std::span<std::byte>(slots + static_cast<std::size_t>(from) * block, n);
      discard.resize(n);
      return std::span<std::byte>(discard);
    };
    // By reference: a std::function holding the lambda itself would allocate on every call.
    link.send_recv_framed(to, std::as_bytes(std::span(&out, 1)), body, from, std::as_writable_bytes(std::span(&theirs, 1)),
                          std::cref(body_for));
  }
}

}  // namespace

void agree(Link& link, const Descriptor& mine, const std::byte* send, Agreement& a) {
  const int p = link.world_size(), r = link.rank();
  a.why.clear();
  a.bodies.clear();
  a.scratch = nullptr;
  // A slot a rank: what each peer sent, and this rank's own as scratch for a reduction.
  const std::size_t block = data_rides(mine.head) ? block_bytes(mine.head) : 0;
  std::byte* slots = block > 0 ? link.workspace(static_cast<std::size_t>(p) * block) : nullptr;
  exchange_heads(link, mine.head, send, slots, block, a.heads);
  const auto agrees = [&](const CallHeader& h) {
    return h.invalid == 0 && std::memcmp(&h, a.heads.data(), offsetof(CallHeader, data)) == 0;
  };
  if (!std::all_of(a.heads.begin(), a.heads.end(), agrees)) {
    a.why = find_disagreement(exchange_all(link, mine));
    return;
  }
  if (block == 0) return;
  for (int q = 0; q < p; ++q) {  // every header is mine but for its data: what q sent is what mine says
    const std::size_t n = ride_bytes_of(mine.head, block, q);
    const std::byte* from = q == r ? ride_data(mine.head, send, r)
                            : n <= kHeaderData ? a.heads[static_cast<std::size_t>(q)].data
                                               : slots + static_cast<std::size_t>(q) * block;
    a.bodies.push_back(n > 0 ? from : nullptr);
  }
  a.scratch = slots + static_cast<std::size_t>(r) * block;
}

std::string check_counts(Link& link, std::span<const std::size_t> send_counts, std::span<const std::size_t> recv_counts) {
  const int p = link.world_size(), r = link.rank();
  std::vector<uint64_t> mine(send_counts.begin(), send_counts.end()), theirs(static_cast<std::size_t>(p), 0);
  std::vector<Pending> recvs, sends;
  for (int q = 0; q < p; ++q)
    if (q != r) link.irecv(q, &theirs[static_cast<std::size_t>(q)], sizeof(uint64_t), recvs);
  for (int q = 0; q < p; ++q)
    if (q != r) link.isend(q, &mine[static_cast<std::size_t>(q)], sizeof(uint64_t), sends);
  wait_all(recvs);
  wait_all(sends);
  std::vector<std::string> wrong;
  for (int q = 0; q < p; ++q) {
    const auto Q = static_cast<std::size_t>(q);
    if (q != r && theirs[Q] != recv_counts[Q])
      wrong.push_back(fmt::format("rank {} sends {} elements, rank {} expects {}", q, theirs[Q], r, recv_counts[Q]));
  }
  return fmt::format("{}", fmt::join(wrong, "; "));
}

std::string ranks_disagree(const char* field, const std::vector<std::string>& value_of_rank) {
  std::map<std::string, std::vector<std::size_t>> groups;  // value -> ranks, ascending
  for (std::size_t r = 0; r < value_of_rank.size(); ++r) groups[value_of_rank[r]].push_back(r);
  if (groups.size() <= 1) return {};
  std::vector<std::string> parts;
  for (const auto& [v, ranks] : groups)
    parts.push_back(fmt::format("{} on rank{} {}", v, ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", ")));
  return fmt::format("ranks disagree on {}: {}", field, fmt::join(parts, "; "));
}

std::string find_disagreement(const std::vector<Descriptor>& all) {
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].head.invalid != 0)
      return fmt::format("invalid arguments on rank {}: {}", r, std::string(all[r].reason, strnlen(all[r].reason, sizeof all[r].reason)));
  auto differ = [&](const char* field, const std::function<std::string(const Descriptor&)>& value) {
    std::vector<std::string> values;
    for (const Descriptor& d : all) values.push_back(value(d));
    return ranks_disagree(field, values);
  };
  const auto kind = [](const Descriptor& d) { return static_cast<CollKind>(d.head.kind); };
  if (auto e = differ("the collective", [&](const Descriptor& d) {
        return fmt::format("{} #{}", coll_name(kind(d)), d.head.seq);
      }); !e.empty())
    return e;
  std::vector<std::string> found;
  auto add = [&](std::string e) { if (!e.empty()) found.push_back(std::move(e)); };
  add(differ("memory", [](const Descriptor& d) { return std::string(d.head.on_device ? "device" : "host"); }));
  add(differ("count", [](const Descriptor& d) { return std::to_string(d.head.count); }));
  if (kind(all[0]) != CollKind::kBarrier)
    add(differ("dtype", [](const Descriptor& d) { return std::string(dtype_name(static_cast<DType>(d.head.dtype))); }));
  if (has_op(kind(all[0])))
    add(differ("op", [](const Descriptor& d) { return std::string(reduce_op_name(static_cast<ReduceOp>(d.head.op))); }));
  if (has_root(kind(all[0]))) add(differ("root", [](const Descriptor& d) { return std::to_string(d.head.root); }));
  add(differ("algorithm (RINGGRAD_ALGO or the cost model differ)",
             [](const Descriptor& d) { return std::string(algo_name(static_cast<Algo>(d.head.algo))); }));
  add(differ("chunk_bytes (RINGGRAD_CHUNK_BYTES)", [](const Descriptor& d) { return std::to_string(d.head.chunk_bytes); }));
  add(differ("backend (RINGGRAD_BACKEND)", [](const Descriptor& d) { return std::string(d.head.by_mpi ? "mpi" : "ringgrad"); }));
  return fmt::format("{}", fmt::join(found, "; "));
}

void agree_on_check(transport::Store& store, int rank, int world_size, bool check_args) {
  const auto key = [](int r) { return fmt::format("ringgrad/check/{}", r); };
  store.set(key(rank), check_args ? "on" : "off");
  std::vector<std::string> values;
  for (int r = 0; r < world_size; ++r) values.push_back(store.get(key(r)));
  if (std::string why = ranks_disagree("the argument check (RINGGRAD_CHECK)", values); !why.empty())
    throw CollectiveError(fmt::format("Communicator on rank {}: {}", rank, why));
}

}  // namespace ringgrad::collectives
