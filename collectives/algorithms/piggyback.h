// Piggyback: a small call's data travels in its argument check's message. What it saves: a
// call whose every peer needs the sender's whole block (a one-shot all-reduce, an all-gather,
// a broadcast, an all-to-all) would take the check's exchange, then an exchange of its own;
// with the data in the check's message it takes one, about half a small call's latency on 2
// ranks. When it is chosen: the check is on, the buffers are
// host memory that ringgrad moves (not MPI), and one block fits a piece (chunk_bytes) and
// kPiggybackMaxBytes. Up to kHeaderData bytes ride inside the 48-byte header, more right behind
// it in the same framed message (Link::send_recv_framed). The plain road, which this replaces
// for such calls, is check.h's agree() followed by the algorithm (one_shot_all_reduce.cc,
// ring_all_reduce.cc's all-gather, chain.cc, all_to_all.cc).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/check.h"

namespace ringgrad::collectives {

/// The most bytes a rank sends a peer with its header. A body lands in the link's workspace and
/// is copied into place from there: above this, that copy cost more than the exchange it saved
/// (an all-gather of 128 KiB a rank took 6-9% longer; docs/journal.md).
constexpr std::size_t kPiggybackMaxBytes = 64 << 10;

/// Whether the call's data rides with the check: a valid call of host memory that ringgrad
/// moves (not MPI), a one-shot all-reduce, all-gather, broadcast or all-to-all, whose block
/// (count elements, per peer in all-to-all: `block` bytes) fits one piece (chunk_bytes) and
/// kPiggybackMaxBytes. Every rank decides alike when headers agree.
bool piggybacks(const CallHeader& h, std::size_t block);

/// Bytes rank `sender` sends each peer with its header when piggybacks(h), else 0: count
/// elements, none from a broadcast's non-roots. Above kHeaderData they follow as a body, whose
/// length the header carries (check.h: body_bytes).
std::size_t piggyback_bytes(const CallHeader& h, int sender);

/// Runs a call for which piggybacks(mine.head, block): one framed exchange with every peer (p-1
/// pairwise steps, each sending this rank's header with its data for that peer and receiving
/// the peer's), then, if every header agrees, the rest on this rank alone: the one-shot
/// all-reduce's reduction in rank order (one_shot_all_reduce.cc), or copies into place. Returns
/// "" when done, else why the ranks' calls differ (the same on every rank; nothing written to
/// args.recv). Afterwards `heads` holds every rank's header and `bodies` where what each sent
/// this rank lies; the caller keeps both from call to call, so a call allocates nothing. Host
/// memory; throws TransportError.
std::string piggyback(Link& link, const Descriptor& mine, const CollArgs& args, std::size_t block,
                      std::vector<CallHeader>& heads, std::vector<const std::byte*>& bodies);

}  // namespace ringgrad::collectives
