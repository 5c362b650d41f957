// The argument check: each rank validates its own buffers, then (unless turned off) every
// rank sends a 48-byte header of its call to every other and all compare, so ranks that
// disagree on kind, count, dtype, op, root, algorithm, chunk size or backend all throw the same
// named error. Only when the headers disagree (or a rank's call is invalid) do the ranks
// exchange the full descriptors that name the mismatch. A small call whose data every peer
// needs whole (a one-shot all-reduce, an all-gather, a broadcast, an all-to-all) carries that
// data with the header, in it when it fits, else as a body right behind it in the same
// exchange: the check is then the call's only exchange, and costs nothing extra.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/algo.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/buffer.h"
#include "collectives/links/link.h"
#include "transport/store.h"

namespace ringgrad::collectives {

/// The tag of the check's messages (collectives use their sequence number, send/recv bit 63).
constexpr uint64_t kCheckTag = uint64_t{1} << 62;

/// Bytes of call data a header carries: 4 float32, 2 float64.
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
  uint8_t unused;                 // zero: the fields above are compared byte for byte
  alignas(8) std::byte data[kHeaderData];  // what this rank sends the receiver, when it fits (ride_bytes())
};
static_assert(sizeof(CallHeader) == 48);

/// The header and, for an invalid call, why: sent only when the headers disagree.
struct Descriptor {
  CallHeader head;
  char reason[192];  // a C string, "" when valid
};

/// The most bytes a rank sends a peer with its header. A body lands in the link's workspace
/// and is copied into place from there: above this, that copy cost more than the exchange it
/// saved (an all-gather of 128 KiB a rank took 6-9% longer; docs/collectives.md).
constexpr std::size_t kRideMaxBytes = 64 << 10;

/// Whether the call's data rides with the check: a valid call of host memory that ringgrad
/// moves (not MPI), a one-shot all-reduce, all-gather, broadcast or all-to-all, whose count
/// elements (per peer, in all-to-all) fit one piece (chunk_bytes) and kRideMaxBytes. Every rank
/// decides alike when headers agree.
bool data_rides(const CallHeader& h);

/// Bytes rank `sender` sends each peer with its header when data_rides(h), else 0: count
/// elements, none from a broadcast's non-roots. At most kHeaderData go inside the header, more
/// as a body right behind it. A receiver reads this off the sender's header, so it takes exactly
/// what was sent even when the two disagree.
std::size_t ride_bytes(const CallHeader& h, int sender);

/// What a rank sends peer `to` with its header, ride_bytes() long: its send buffer, or in
/// all-to-all its block for `to`.
const std::byte* ride_data(const CallHeader& h, const std::byte* send, int to);

/// Empty when the call is usable on this rank, else why not ("recv holds 10 elements, ...").
/// Host and device buffers are not mixed in one call; device buffers must be device memory.
std::string validate(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank, int world_size);

/// The buffers of a call that this rank uses live on `device` (kHost: host memory).
int call_device(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank);

/// The descriptor of a call; an empty `invalid` means valid. Its header's data is left zero
/// (agree() fills it for each peer).
Descriptor describe_call(CollKind kind, uint64_t seq, const CollArgs& args, Algo algo, std::size_t chunk_bytes,
                         bool on_device, bool by_mpi, const std::string& invalid);

/// What agree() found: every rank's header, and why they disagree ("" when they agree). Its
/// vectors keep their capacity from call to call, so a caller that keeps one Agreement (as the
/// Communicator does) allocates nothing in a checked call.
struct Agreement {
  std::vector<CallHeader> heads;  // by rank
  std::string why;
  /// When the headers agree and the call's data came with them (data_rides()): by rank, what
  /// that rank sent this one (in its header, or in the link's workspace; this rank's own is
  /// ride_data() for itself; null from a rank that sent nothing), and count elements more of
  /// workspace for a reduction. Empty and null otherwise.
  std::vector<const std::byte*> bodies;
  std::byte* scratch = nullptr;
};

/// Exchanges headers, each carrying or followed by the sender's data (ride_bytes(); this
/// rank's from `send`, the call's send buffer); `why` is empty when every header agrees with
/// every other and all are valid, otherwise, after a second exchange of the full descriptors,
/// the same message on every rank (find_disagreement). One exchange with every peer each
/// time, in p-1 pairwise steps over `link` (made with tag kCheckTag). Throws TransportError if a peer is dead or silent
/// past the timeout. Fills `found`, whatever it held before.
void agree(Link& link, const Descriptor& mine, const std::byte* send, Agreement& found);

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
