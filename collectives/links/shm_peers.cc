// Setting up the shared-memory path: each rank creates its segment and names it in the store;
// every rank maps every other's, and all agree (through the store) to use it or to keep TCP.
// Also the abort that rings every doorbell, and the checks a wait runs while nothing comes.
#include "collectives/links/shm_peers.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "transport/cpus.h"

namespace ringgrad::collectives {
namespace {

static_assert(sizeof(ShmInbox) % 64 == 0 && sizeof(ShmDoorbell) == 64);

// A segment: the doorbell, p inboxes' heads (one inbox per sender; the owner's own is unused), then
// p x kShmSlots slots. Every offset is a multiple of 64 bytes: a slot takes chunk_bytes rounded
// up to a cache line (a chunk may be any multiple of 8), so no two slots share a line and every
// slot starts where streaming stores can write whole lines.
std::size_t headers_bytes(int p) { return sizeof(ShmDoorbell) + static_cast<std::size_t>(p) * sizeof(ShmInbox); }
std::size_t slot_stride(std::size_t chunk) { return (chunk + 63) / 64 * 64; }
std::size_t segment_bytes(int p, std::size_t chunk) {
  return headers_bytes(p) + static_cast<std::size_t>(p) * kShmSlots * slot_stride(chunk);
}

const char* link_name(ShmLinkKind link) { return link == ShmLinkKind::kPlain ? "plain" : "fast"; }

}  // namespace

std::unique_ptr<ShmPeers> ShmPeers::connect(transport::Transport& transport, std::size_t chunk_bytes, bool enabled,
                                            ShmStores stores, ShmLinkKind link, std::string& why) {
  const int r = transport.rank(), p = transport.world_size();
  transport::Store& store = transport.store();
  const std::size_t bytes = segment_bytes(p, chunk_bytes);
  std::unique_ptr<ShmPeers> peers(new ShmPeers(p, chunk_bytes));
  peers->segments_.resize(static_cast<std::size_t>(p));
  peers->sent_.assign(static_cast<std::size_t>(p), Sent{.writer = InboxWriter(stores)});
  // Why this rank cannot use shared memory, empty when it can.
  std::string problem = enabled ? "" : fmt::format("rank {}: shared memory turned off (RINGGRAD_SHM=0)", r);
  if (problem.empty()) {
    try {
      peers->segments_[static_cast<std::size_t>(r)] = transport::SharedMemory::create(transport::unique_segment_name(std::to_string(r)), bytes);
    } catch (const transport::TransportError& e) {
      problem = fmt::format("rank {}: {}", r, e.what());
    }
  }
  const transport::SharedMemory& mine = peers->segments_[static_cast<std::size_t>(r)];
  store.set(fmt::format("collectives/shm/segment/{}", r), fmt::format("{} {} {}", chunk_bytes, link_name(link), mine.name()));
  for (int q = 0; q < p; ++q) {
    if (q == r) continue;
    // "<chunk bytes> <link> <segment name>", the name empty when q has no segment.
    const std::string value = store.get(fmt::format("collectives/shm/segment/{}", q));
    const std::size_t space = value.find(' '), space2 = value.find(' ', space + 1);
    const std::string their_chunk = value.substr(0, space), their_link = value.substr(space + 1, space2 - space - 1),
                      name = value.substr(space2 + 1);
    if (their_chunk != std::to_string(chunk_bytes))
      throw transport::TransportError(fmt::format("rank {}: chunk bytes {} but rank {} uses {} (RINGGRAD_CHUNK_BYTES differs)",
                                                  r, chunk_bytes, q, their_chunk));
    if (their_link != link_name(link))
      throw transport::TransportError(fmt::format("rank {}: the {} shared-memory link but rank {} uses the {} one "
                                                  "(RINGGRAD_SHM_LINK differs)", r, link_name(link), q, their_link));
    if (!problem.empty() || name.empty()) continue;  // a rank without a segment reports its own reason
    try {
      peers->segments_[static_cast<std::size_t>(q)] = transport::SharedMemory::open(name, bytes);
    } catch (const transport::TransportError& e) {
      problem = fmt::format("rank {} cannot map rank {}'s segment: {}", r, q, e.what());
    }
  }
  // Every rank says whether it mapped everything; the path is shared memory only if all did.
  store.set(fmt::format("collectives/shm/mapped/{}", r), problem);
  store.set(fmt::format("collectives/shm/cpus/{}", r), fmt::format("{}", fmt::join(transport::allowed_cpus(), " ")));
  std::set<int> cpus;
  for (int q = 0; q < p; ++q) {
    const std::string theirs = store.get(fmt::format("collectives/shm/mapped/{}", q));
    if (why.empty()) why = theirs;
    std::istringstream list(store.get(fmt::format("collectives/shm/cpus/{}", q)));
    for (int cpu; list >> cpu;) cpus.insert(cpu);
  }
  peers->cpus_ = std::max<int>(1, static_cast<int>(cpus.size()));
  // Everybody who could map this segment has: its name can go.
  peers->segments_[static_cast<std::size_t>(r)].unlink();
  if (!why.empty()) return nullptr;
  return peers;
}

ShmDoorbell& ShmPeers::doorbell(int rank) const {
  return *reinterpret_cast<ShmDoorbell*>(segments_[static_cast<std::size_t>(rank)].data());
}

ShmInbox& ShmPeers::inbox(int owner, int sender) const {
  std::byte* base = segments_[static_cast<std::size_t>(owner)].data() + sizeof(ShmDoorbell);
  return reinterpret_cast<ShmInbox*>(base)[sender];
}

std::byte* ShmPeers::slot(int owner, int sender, std::uint32_t k) const {
  const std::size_t index = static_cast<std::size_t>(sender) * kShmSlots + k % kShmSlots;
  return segments_[static_cast<std::size_t>(owner)].data() + headers_bytes(world_size_) + index * slot_stride(chunk_bytes_);
}

void ShmPeers::ring(int rank) const {
  ShmDoorbell& bell = doorbell(rank);
  // ShmLink's doorbell trick (shm_link.cc): a rank that polls watches the counts themselves;
  // only a sleeper needs the doorbell. The fence orders "publish the count, then look for
  // sleepers" against the sleeper's "sleepers++, then look at the counts": either it sees the
  // new count and does not sleep, or this sees it asleep and wakes it. A fence stays in this
  // core; a bump of a line the peer spins on would cross to the peer's core and back on every
  // piece (a third of a small all-reduce's time).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (std::atomic_ref(bell.sleepers).load() > 0) wake(bell);
}

void ShmPeers::wake(ShmDoorbell& bell) const {
  std::atomic_ref(bell.rings).fetch_add(1);
  transport::futex_wake(&bell.rings);
}

// An ShmAbort as one word: (1 + first) << 24 | rank (ranks are below 2^20, the transport's
// largest world). A reader sees a consistent pair, 0 means no failure, and the words order as
// their `first`s do, so an atomic minimum keeps the earliest failure.
constexpr int kAbortRankBits = 24;

void ShmPeers::abort(int rank, std::uint64_t first) const {
  const std::uint64_t word = (first + 1) << kAbortRankBits | static_cast<std::uint64_t>(rank);
  for (int q = 0; q < world_size_; ++q) {
    std::atomic_ref aborted(doorbell(q).aborted);
    std::uint64_t seen = aborted.load();  // replaced while it is none or a later failure
    while ((seen == 0 || word < seen) && !aborted.compare_exchange_weak(seen, word)) continue;
    wake(doorbell(q));
  }
}

std::optional<ShmAbort> ShmPeers::aborted(int rank) const {
  const std::uint64_t word = std::atomic_ref(doorbell(rank).aborted).load();
  if (word == 0) return std::nullopt;
  return ShmAbort{static_cast<int>(word & ((1u << kAbortRankBits) - 1)), (word >> kAbortRankBits) - 1};
}

void ShmPeers::fail_if_stuck(const transport::Transport& transport, std::uint64_t seq, int to, int from,
                             std::chrono::steady_clock::time_point last, const std::function<std::string()>& what) const {
  const int r = transport.rank();
  // A peer that failed after it finished this collective leaves it to finish: its pieces are
  // already in the inboxes.
  if (const std::optional<ShmAbort> failed = aborted(r); failed && failed->first <= seq)
    throw transport::TransportError(fmt::format("rank {}: rank {} failed and runs no collective from #{} on, so this "
                                                "one stops ({})", r, failed->rank, failed->first, what()));
  for (int peer : {to, from}) {
    if (peer >= 0 && !transport.connected(peer))
      throw transport::TransportError(fmt::format("rank {}: rank {} closed its connection: it exited or died ({})",
                                                  r, peer, what()));
  }
  if (std::chrono::steady_clock::now() - last > transport.timeout())
    throw transport::TransportError(fmt::format("rank {}: no progress over shared memory for {} ms (a peer may have hung or "
                                                "be waiting on something else; {})", r, transport.timeout().count(), what()));
}

}  // namespace ringgrad::collectives
