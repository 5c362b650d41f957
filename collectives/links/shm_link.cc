// ShmLink: PlainShmLink's protocol (plain_shm_link.cc) with the tricks shm_link.h lists, each
// named where it lives.
#include "collectives/links/shm_link.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include <fmt/format.h>

#include "collectives/reduce/reduce_kernel.h"

namespace ringgrad::collectives {

namespace {

using Clock = std::chrono::steady_clock;

// A sleeping rank looks at its peers' health at this interval.
constexpr auto kHealthCheckInterval = std::chrono::milliseconds(5);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

std::chrono::microseconds shm_poll_default(int threads, int cpus) {
  // A peer inside the same collective answers within one piece's copy (10-20 us for 128 KiB),
  // so kShmPollBrief covers the waits within a collective. A peer that is still computing (the
  // slower rank of a training step) takes milliseconds: sleeping through that costs a wake-up,
  // which is slow where idle CPUs halt at once (virtual machines without guest halt-polling).
  // Polling 5 ms there shortens DDP's wait for the slower rank (docs/distributed.md).
  // Polling is free only while no one else needs the CPU: with more busy threads than CPUs it
  // would take the CPU from the rank being waited for, or from its own caller's computation.
  //
  // The CPUs counted are those the ranks may run on (taskset, cpusets, binding), not all of the
  // host's. Other jobs' load is invisible here: RINGGRAD_SHM_POLL_US=20 for jobs that share them.
  return threads <= cpus ? std::chrono::microseconds(5000) : kShmPollBrief;
}

ShmLink::ShmLink(ShmPeers& peers, transport::Transport& transport, uint64_t seq, uint64_t tag,
                 const ShmPoll& poll, HostBuffers& buffers)
    : PollingLink(transport.rank(), transport.world_size(), peers.chunk_bytes(), buffers),
      peers_(peers),
      transport_(transport),
      seq_(seq),
      tag_(tag),
      poll_(poll) {}

// Trick: four slots a pair, and the sender's own count of them. The plain link's sender waits
// for the receiver to take each piece before it writes the next; here it runs up to kShmSlots
// pieces ahead, so its copy in overlaps the receiver's copy out. It counts the pieces it wrote
// and remembers the last `consumed` it read, and reads the receiver's line again only when those
// say the inbox is full: a small piece costs it no cache-line transfer from the receiver. Buys,
// with plain stores on both links: a 16 MiB all-reduce on 2 ranks 1.57x faster than the plain
// link's (docs/collectives.md, "The plain shared-memory link beside the fast one").
//
// Trick: small pieces in the head line. A piece of at most kShmInlineBytes goes into its slot's
// head, beside its number, size and tag, so it reaches the receiver in one cache-line transfer
// where the plain link's takes two, the head's line, then the slot's (Open MPI's shared-memory
// "fast boxes" do the same). Buys, with the sender's own count: an 8-byte all-reduce 1.18x
// faster (the same table). Chosen for pieces of at most kShmInlineBytes.
bool ShmLink::advance_send(Outgoing& out) {
  ShmInbox& box = peers_.inbox(out.to, rank());
  ShmPeers::Sent& sent = peers_.sent(out.to);
  if (sent.written - sent.consumed == kShmSlots) {  // full when last looked: look again
    sent.consumed = std::atomic_ref(box.receiver.consumed).load(std::memory_order_acquire);
    if (sent.written - sent.consumed == kShmSlots) return false;
  }
  const std::size_t n = std::min(chunk_bytes(), out.bytes - out.done);
  ShmInbox::Head& head = box.heads[sent.written % kShmSlots];
  if (n <= kShmInlineBytes)
    std::memcpy(head.data, out.src + out.done, n);
  else
    sent.writer.write(peers_.slot(out.to, rank(), sent.written), out.src + out.done, n);
  head.bytes = static_cast<std::uint32_t>(n);
  head.tag = tag_;
  std::atomic_ref(head.number).store(++sent.written, std::memory_order_release);
  peers_.ring(out.to);
  out.done += n;
  return true;
}

const ShmInbox::Head* ShmLink::arrived(int from) const {
  const ShmInbox& box = peers_.inbox(rank(), from);
  const std::uint32_t consumed = box.receiver.consumed;  // only this rank writes it
  const ShmInbox::Head& head = box.heads[consumed % kShmSlots];
  if (std::atomic_ref(head.number).load(std::memory_order_acquire) != consumed + 1) return nullptr;
  if (head.tag != tag_)
    throw transport::TransportError(fmt::format("rank {}: rank {} sent a piece of operation {:#x}, expected {:#x} (the "
                                                "ranks disagree on the order of collectives)", rank(), from,
                                                head.tag, tag_));
  return &head;
}

const std::byte* ShmLink::piece(const ShmInbox::Head& head, int from) const {
  return head.bytes <= kShmInlineBytes ? head.data : peers_.slot(rank(), from, peers_.inbox(rank(), from).receiver.consumed);
}

void ShmLink::consume(int from) {
  std::uint32_t& consumed = peers_.inbox(rank(), from).receiver.consumed;
  std::atomic_ref(consumed).store(consumed + 1, std::memory_order_release);
  peers_.ring(from);
}

bool ShmLink::advance_recv(Incoming& in) {
  const ShmInbox::Head* head = arrived(in.from);
  if (head == nullptr) return false;
  const std::size_t n = std::min(chunk_bytes(), in.bytes - in.done);
  if (head->bytes != n)
    throw transport::TransportError(fmt::format("rank {}: rank {} sent a piece of {} bytes, expected {} (the ranks "
                                                "disagree on the collective)", rank(), in.from, head->bytes, n));
  if (in.a == nullptr)
    std::memcpy(in.dst + in.done, piece(*head, in.from), n);
  else
    combine(in.dst + in.done, in.a + in.done, piece(*head, in.from), n / dtype_size(in.dtype), in.dtype, in.op);
  consume(in.from);
  in.done += n;
  return true;
}

void ShmLink::send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                               std::span<std::byte> their_head, const BodyDestination& body_for) {
  const std::size_t together = head.size() + body.size();
  if (!body.empty() && together <= std::min(kShmFramedBytes, chunk_bytes())) {
    std::vector<std::byte>& framed = buffers().framed;
    framed.assign(head.begin(), head.end());
    framed.insert(framed.end(), body.begin(), body.end());
    send(to, framed.data(), together);
  } else {
    send(to, head.data(), head.size());
    if (!body.empty()) send(to, body.data(), body.size());
  }
  if (from < 0) return;
  // Wait for the head's piece as for any receive of head.size() bytes, then read its length.
  const Outgoing none = Outgoing::of(-1, nullptr, 0);
  const Incoming waiting = Incoming::copy(from, their_head.data(), their_head.size());
  const ShmInbox::Head* h = arrived(from);
  if (h == nullptr) {
    const Clock::time_point last = Clock::now();
    while ((h = arrived(from)) == nullptr) wait(none, waiting, last);
  }
  const std::size_t came = h->bytes;
  if (came < their_head.size())
    throw transport::TransportError(fmt::format("rank {}: rank {} sent a head of {} bytes, expected {} (the ranks "
                                                "disagree on the collective)", rank(), from, came, their_head.size()));
  const std::byte* p = piece(*h, from);
  std::memcpy(their_head.data(), p, their_head.size());
  const std::span<std::byte> their_body = body_for(their_head);
  if (came == their_head.size()) {  // a head alone: its body, if any, is the next piece
    consume(from);
    if (!their_body.empty()) recv(from, their_body.data(), their_body.size());
    return;
  }
  if (came - their_head.size() != their_body.size())
    throw transport::TransportError(fmt::format("rank {}: rank {} sent a body of {} bytes behind its head, which says {}",
                                                rank(), from, came - their_head.size(), their_body.size()));
  std::memcpy(their_body.data(), p + their_head.size(), their_body.size());
  consume(from);
}

bool ShmLink::ready(const Outgoing& out, const Incoming& in) const {
  if (out.done < out.bytes) {
    const std::uint32_t consumed =
        std::atomic_ref(peers_.inbox(out.to, rank()).receiver.consumed).load(std::memory_order_acquire);
    if (peers_.sent(out.to).written - consumed < kShmSlots) return true;
  }
  if (in.done < in.bytes) {
    ShmInbox& box = peers_.inbox(rank(), in.from);
    const std::uint32_t consumed = box.receiver.consumed;
    if (std::atomic_ref(box.heads[consumed % kShmSlots].number).load(std::memory_order_acquire) == consumed + 1)
      return true;
  }
  return false;
}

void ShmLink::exchange(Outgoing out, Incoming in) {
  // When the last progress was: read from the clock only once a wait begins (a small piece
  // usually finds its peer ready, and a clock read costs as much as the piece).
  Clock::time_point last;
  bool moved_since_wait = true;
  while (out.done < out.bytes || in.done < in.bytes) {
    bool moved = false;
    if (out.done < out.bytes) moved |= advance_send(out);
    if (in.done < in.bytes) moved |= advance_recv(in);
    if (moved) {
      moved_since_wait = true;
    } else {
      if (moved_since_wait) last = Clock::now(), moved_since_wait = false;
      wait(out, in, last);
    }
  }
}

void ShmLink::wait(const Outgoing& out, const Incoming& in, Clock::time_point last) {
  ShmDoorbell& bell = peers_.doorbell(rank());
  const auto now = Clock::now();
  if (const auto poll = poll_.now(); now < last + poll) {
    // Poll the counts until `poll` after the last progress, but one nap at most: the checks
    // below run every kHealthCheckInterval however long the poll. The clock is read once per 64 looks.
    for (const auto end = std::min(last + poll, now + kHealthCheckInterval); Clock::now() < end;) {
      for (int i = 0; i < 64; ++i) {
        if (ready(out, in)) return;
        cpu_relax();
      }
    }
  } else {
    // Trick: a doorbell rung only for sleepers. Where the plain link naps and looks again, a
    // wait here sleeps on its doorbell's futex and the peer that gives it work wakes it at once;
    // and the peer rings only when the doorbell says someone sleeps (ShmPeers::ring), so while
    // the receiver polls a piece costs the sender no system call. It is an eventcount: read the
    // doorbell, say we sleep, look once more, then sleep unless it rang. Buys: when every piece
    // rang, ringing was a third of an 8-byte all-reduce's time (docs/collectives.md).
    std::atomic_ref rings(bell.rings), sleepers(bell.sleepers);
    const std::uint32_t seen = rings.load();
    sleepers.fetch_add(1);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with ShmPeers::ring's fence
    if (!ready(out, in)) transport::futex_wait(&bell.rings, seen, kHealthCheckInterval);
    sleepers.fetch_sub(1);
  }
  if (ready(out, in)) return;
  // Nothing came: is anyone we wait for gone?
  peers_.fail_if_stuck(transport_, seq_, out.done < out.bytes ? out.to : -1, in.done < in.bytes ? in.from : -1, last,
                       [&] { return waiting_for(out, in); });
}

}  // namespace ringgrad::collectives
