// The argument check: each rank validates its own buffers, then (unless turned off) every
// rank sends a small descriptor of its call to every other and all compare, so ranks that
// disagree on kind, count, dtype, op, root or algorithm all throw the same named error. A
// one-shot all-reduce small enough rides in the descriptor's body: the check is then the
// call's only exchange, and costs nothing extra.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/algo.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/buffer.h"
#include "collectives/links/link.h"

namespace ringgrad::collectives {

/// The tag of the descriptor messages (collectives use their sequence number, send/recv bit 63).
constexpr uint64_t kCheckTag = uint64_t{1} << 62;

/// Bytes of a descriptor's body: why the call is invalid, or a short call's data.
constexpr std::size_t kDescriptorBody = 216;

/// One rank's view of a collective call, as sent to the others: 256 bytes (four cache lines),
/// the same size whatever the call, so ranks that disagree still exchange them cleanly.
struct Descriptor {
  uint64_t seq;
  uint64_t count;
  uint64_t chunk_bytes;
  int32_t root;  // -1 when the collective has none
  uint8_t kind, dtype, op, algo;  // op 255 when the collective has none
  uint8_t on_device;              // 1: device buffers, 0: host memory
  uint8_t invalid;                // 1: this rank's call is invalid, and the body says why
  uint8_t unused[6];              // zero: the fields above are compared byte for byte
  // Invalid: the reason, a C string. Valid and carries_data(): this rank's input. Else unused.
  alignas(8) std::byte body[kDescriptorBody];
};
static_assert(sizeof(Descriptor) == 256);

/// Whether the call's own data travels in the descriptor's body: a one-shot all-reduce of host
/// memory whose vector fits. Every rank decides alike when the descriptors agree.
bool carries_data(const Descriptor& d);

/// The reason in an invalid descriptor's body.
std::string invalid_reason(const Descriptor& d);

/// Empty when the call is usable on this rank, else why not ("recv holds 10 elements, ...").
/// Host and device buffers are not mixed in one call; device buffers must be device memory.
std::string validate(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank, int world_size);

/// The buffers of a call that this rank uses live on `device` (kHost: host memory).
int call_device(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank);

/// The descriptor of a call; an empty `invalid` means valid, and then a call that
/// carries_data() has its send buffer copied into the body.
Descriptor describe_call(CollKind kind, uint64_t seq, const CollArgs& args, Algo algo, std::size_t chunk_bytes,
                         bool on_device, const std::string& invalid);

/// Every rank's descriptor, indexed by rank: one message to and from every peer, in p-1 pairwise steps,
/// over `link` (made with tag kCheckTag). Throws TransportError if a peer is dead or silent
/// past the timeout.
std::vector<Descriptor> exchange_descriptors(Link& link, const Descriptor& mine);

/// all_to_all_v's pairwise agreement: each rank sends every peer the count it will send it and
/// compares the peer's with the count it expects. Empty when all match, else this rank's
/// mismatches ("rank 2 sends 5 elements, rank 1 expects 4"); ranks learn of one another's in
/// a second descriptor exchange. One message to and from every peer, over `link`.
std::string check_counts(Link& link, std::span<const std::size_t> send_counts, std::span<const std::size_t> recv_counts);

/// Empty when all agree and are valid; otherwise e.g. "ranks disagree on count: 1000 on
/// ranks 0, 2; 999 on rank 1" or "invalid arguments on rank 1: ...". The same on every rank.
std::string find_disagreement(const std::vector<Descriptor>& all);

}  // namespace ringgrad::collectives
