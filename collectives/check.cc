// The argument check across ranks: headers exchanged and compared, the descriptors that name
// a mismatch, all_to_all_v's per-pair counts, and the one-time comparison of whether the check
// is on.
#include "collectives/check.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "collectives/collective_error.h"
#include "collectives/enum_format.h"

namespace ringgrad::collectives {

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

}  // namespace

std::string agree(Link& link, const Descriptor& mine, std::vector<CallHeader>& heads) {
  const int p = link.world_size(), r = link.rank();
  heads.assign(static_cast<std::size_t>(p), mine.head);
  std::vector<std::byte> dropped;
  for (int s = 1; s < p; ++s) {
    const int to = (r + s) % p, from = (r - s + p) % p;
    CallHeader& theirs = heads[static_cast<std::size_t>(from)];
    // A peer whose call differs from this one may have sent its data behind its header
    // (piggyback.h): it is read and dropped, so the link stays in step for the descriptors.
    const auto drop_body = [&](std::span<const std::byte> /*head, received into theirs*/) {
      dropped.resize(body_bytes(theirs));
      return std::span<std::byte>(dropped);
    };
    // By reference: a std::function holding the lambda itself would allocate on every call.
    link.send_recv_framed(to, std::as_bytes(std::span(&mine.head, 1)), {}, from,
                          std::as_writable_bytes(std::span(&theirs, 1)), std::cref(drop_body));
  }
  return headers_agree(heads) ? std::string() : disagreement(link, mine);
}

std::string disagreement(Link& link, const Descriptor& mine) { return find_disagreement(exchange_all(link, mine)); }

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
        return fmt::format("{} #{}", kind(d), d.head.seq);
      }); !e.empty())
    return e;
  std::vector<std::string> found;
  auto add = [&](std::string e) { if (!e.empty()) found.push_back(std::move(e)); };
  add(differ("memory", [](const Descriptor& d) { return std::string(d.head.on_device ? "device" : "host"); }));
  add(differ("count", [](const Descriptor& d) { return std::to_string(d.head.count); }));
  if (kind(all[0]) != CollKind::kBarrier)
    add(differ("dtype", [](const Descriptor& d) { return fmt::format("{}", static_cast<DType>(d.head.dtype)); }));
  if (has_op(kind(all[0])))
    add(differ("op", [](const Descriptor& d) { return fmt::format("{}", static_cast<ReduceOp>(d.head.op)); }));
  if (has_root(kind(all[0]))) add(differ("root", [](const Descriptor& d) { return std::to_string(d.head.root); }));
  add(differ("algorithm (RINGGRAD_ALGO or the cost model differ)",
             [](const Descriptor& d) { return fmt::format("{}", static_cast<Algo>(d.head.algo)); }));
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
