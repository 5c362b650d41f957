// The argument check: every rank sends a 48-byte header of its call to every other and all
// compare, so ranks that disagree on kind, count, dtype, op, root, algorithm, chunk size or
// backend all throw the same named error instead of hanging or mixing up data. Only when the
// headers disagree (or a rank's call is invalid) do the ranks exchange the full descriptors
// that name the mismatch. Cost: one exchange with every peer (p-1 pairwise steps of 48 bytes)
// before the call's own; RINGGRAD_CHECK=0 turns it off. A small call's data can travel in the
// same exchange (algorithms/piggyback.h). A reader learning the algorithms may skip this file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "collectives/algo.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/links/link.h"
#include "transport/store.h"

namespace ringgrad::collectives {

/// The tag of the check's messages (collectives use their sequence number, send/recv bit 63).
constexpr uint64_t kCheckTag = uint64_t{1} << 62;

/// Bytes of call data a header carries: 4 float32, 2 float64 (algorithms/piggyback.h).
constexpr std::size_t kHeaderData = 16;

/// One rank's view of a collective call, as first sent to the others: 48 bytes whatever the
/// call, so ranks that disagree still exchange them cleanly, and few enough to cross shared
/// memory inside one cache line with the piece's number (links/shm_peers.h: kShmInlineBytes).
struct CallHeader {
  uint64_t seq;
  uint64_t count;
  uint32_t chunk_bytes;  // at most 1 GiB (comm_options.h)
  int32_t root;          // -1 when the collective has none
  uint8_t kind, dtype, op, algo;  // op 255 when the collective has none
  uint8_t on_device;              // 1: device buffers, 0: host memory
  uint8_t invalid;                // 1: this rank's call is invalid (the descriptor says why)
  uint8_t by_mpi;                 // 1: MPI moves this call's data (RINGGRAD_BACKEND=mpi)
  // The fields above are compared byte for byte; those below differ from rank to rank.
  uint8_t has_body;               // 1: call data follows as a body, its length in `data` (piggyback.h)
  alignas(8) std::byte data[kHeaderData];  // call data for this receiver, when it fits (piggyback.h)
};
static_assert(sizeof(CallHeader) == 48);

/// The header and, for an invalid call, why: sent only when the headers disagree.
struct Descriptor {
  CallHeader head;
  char reason[192];  // a C string, "" when valid
};

/// The descriptor of a call; an empty `invalid` means valid. Its header's data is left zero.
Descriptor describe_call(CollKind kind, uint64_t seq, const CollArgs& args, Algo algo, std::size_t chunk_bytes,
                         bool on_device, bool by_mpi, const std::string& invalid);

/// The length of the body that follows `h` (0: none); a receiver reads it off the sender's
/// header, so it takes exactly what was sent even when the two ranks' calls differ.
inline std::size_t body_bytes(const CallHeader& h) {
  if (h.has_body == 0) return 0;
  std::uint64_t n = 0;
  std::memcpy(&n, h.data, sizeof n);
  return static_cast<std::size_t>(n);
}

/// Exchanges headers with every peer over `link` (made with tag kCheckTag): p-1 pairwise
/// steps, every rank's header in `heads` (by rank; its capacity kept from call to call).
/// Returns "" when every header agrees with every other and all are valid; otherwise the same
/// message on every rank (disagreement()). Throws TransportError if a peer is dead or silent
/// past the timeout.
std::string agree(Link& link, const Descriptor& mine, std::vector<CallHeader>& heads);

/// Whether every rank's header (`heads`, by rank) is valid and equal to the others, the fields
/// that differ from rank to rank (has_body, data) aside.
inline bool headers_agree(std::span<const CallHeader> heads) {
  for (const CallHeader& h : heads)
    if (h.invalid != 0 || std::memcmp(&h, heads.data(), offsetof(CallHeader, has_body)) != 0) return false;
  return true;
}

/// Why the ranks' calls differ, after headers that did not agree: a second exchange, of the
/// full descriptors, then find_disagreement(). The same message on every rank.
std::string disagreement(Link& link, const Descriptor& mine);

/// all_to_all_v's pairwise agreement: each rank sends every peer the count it will send it and
/// compares the peer's with the count it expects. Empty when all match, else this rank's
/// mismatches ("rank 2 sends 5 elements, rank 1 expects 4"); ranks learn of one another's in
/// a second agreement. One message to and from every peer, over `link`.
std::string check_counts(Link& link, std::span<const std::size_t> send_counts, std::span<const std::size_t> recv_counts);

/// Empty when all agree and are valid; otherwise e.g. "ranks disagree on count: 1000 on
/// ranks 0, 2; 999 on rank 1" or "invalid arguments on rank 1: ...". The same on every rank.
std::string find_disagreement(const std::vector<Descriptor>& all);

/// "ranks disagree on `field`: 4096 on rank 1; 131072 on ranks 0, 2" from each rank's value
/// (by rank), or "" when all are equal.
std::string ranks_disagree(const char* field, const std::vector<std::string>& value_of_rank);

/// The check is on everywhere or nowhere: with it on one rank only, that rank would wait for
/// headers that never come. Publishes this rank's setting in the rendezvous store, reads every
/// rank's, and throws CollectiveError naming the ranks on each side when they differ (on every
/// rank alike). Called once, as the job's Communicator starts; the store's timeout bounds it.
void agree_on_check(transport::Store& store, int rank, int world_size, bool check_args);

}  // namespace ringgrad::collectives
