// PlainShmLink: one slot a pair, counts stored with release and read with acquire, memcpy in and
// out, spin then nap (the link is described in plain_shm_link.h).
#include "collectives/links/plain_shm_link.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "collectives/reduce/reduce_kernel.h"

namespace ringgrad::collectives {

using Clock = std::chrono::steady_clock;

PlainShmLink::PlainShmLink(ShmPeers& peers, transport::Transport& transport, std::uint64_t seq, std::uint64_t tag,
                           HostBuffers& buffers)
    : PollingLink(transport.rank(), transport.world_size(), peers.chunk_bytes(), buffers),
      peers_(peers),
      transport_(transport),
      seq_(seq),
      tag_(tag) {}

// The slot is inbox(to, me).heads[0] with its bytes at slot(to, me, 0). Its `number` counts the
// pieces this rank put there (only this rank writes it) and the receiver's `consumed` the pieces
// it took: the slot is free when the two are equal, and holds a piece when number is one ahead.
// Each count has one writer, so there are no locks: a count's release store publishes what was
// written before it, and the other side's acquire load sees all of that.
bool PlainShmLink::put(Outgoing& out) {
  ShmInbox& box = peers_.inbox(out.to, rank());
  ShmInbox::Head& head = box.heads[0];
  const std::uint32_t number = head.number;
  if (std::atomic_ref(box.receiver.consumed).load(std::memory_order_acquire) != number) return false;
  const std::size_t n = std::min(chunk_bytes(), out.bytes - out.done);
  std::memcpy(peers_.slot(out.to, rank(), 0), out.src + out.done, n);
  head.bytes = static_cast<std::uint32_t>(n);
  head.tag = tag_;
  std::atomic_ref(head.number).store(number + 1, std::memory_order_release);
  out.done += n;
  return true;
}

bool PlainShmLink::take(Incoming& in) {
  ShmInbox& box = peers_.inbox(rank(), in.from);
  const ShmInbox::Head& head = box.heads[0];
  const std::uint32_t consumed = box.receiver.consumed;
  if (std::atomic_ref(head.number).load(std::memory_order_acquire) != consumed + 1) return false;
  const std::size_t n = std::min(chunk_bytes(), in.bytes - in.done);
  if (head.tag != tag_)
    throw transport::TransportError(fmt::format("rank {}: rank {} sent a piece of operation {:#x}, expected {:#x} (the "
                                                "ranks disagree on the order of collectives)", rank(), in.from,
                                                head.tag, tag_));
  if (head.bytes != n)
    throw transport::TransportError(fmt::format("rank {}: rank {} sent a piece of {} bytes, expected {} (the ranks "
                                                "disagree on the collective)", rank(), in.from, head.bytes, n));
  const std::byte* piece = peers_.slot(rank(), in.from, 0);
  if (in.a == nullptr)
    std::memcpy(in.dst + in.done, piece, n);
  else
    combine(in.dst + in.done, in.a + in.done, piece, n / dtype_size(in.dtype), in.dtype, in.op);
  std::atomic_ref(box.receiver.consumed).store(consumed + 1, std::memory_order_release);
  in.done += n;
  return true;
}

void PlainShmLink::exchange(Outgoing out, Incoming in) {
  Clock::time_point last = Clock::now();
  while (out.done < out.bytes || in.done < in.bytes) {
    const bool sent = out.done < out.bytes && put(out);
    const bool took = in.done < in.bytes && take(in);
    if (sent || took) {
      last = Clock::now();
    } else if (Clock::now() - last >= kSpin) {
      // Nothing for a while: give the CPU away for a nap, then see whether anyone we wait for
      // failed, died or has been silent past the timeout.
      std::this_thread::sleep_for(kNap);
      try {
        peers_.fail_if_stuck(transport_, seq_, out.done < out.bytes ? out.to : -1, in.done < in.bytes ? in.from : -1,
                             last, [&] { return waiting_for(out, in); });
      } catch (const transport::TransportError&) {
        // A peer that finished its part and exited (or failed later) left its pieces here:
        // they are still taken. Only a wait that can make no progress fails.
        if (!ready(out, in)) throw;
      }
    }
  }
}

bool PlainShmLink::ready(const Outgoing& out, const Incoming& in) const {
  if (out.done < out.bytes) {
    ShmInbox& box = peers_.inbox(out.to, rank());
    if (std::atomic_ref(box.receiver.consumed).load(std::memory_order_acquire) == box.heads[0].number) return true;
  }
  if (in.done < in.bytes) {
    ShmInbox& box = peers_.inbox(rank(), in.from);
    if (std::atomic_ref(box.heads[0].number).load(std::memory_order_acquire) == box.receiver.consumed + 1) return true;
  }
  return false;
}

void PlainShmLink::send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                                    std::span<std::byte> their_head, const BodyDestination& body_for) {
  send_recv(to, head.data(), head.size(), from, their_head.data(), their_head.size());
  const std::span<std::byte> their_body = from < 0 ? std::span<std::byte>() : body_for(their_head);
  send_recv(to, body.data(), body.size(), from, their_body.data(), their_body.size());
}

}  // namespace ringgrad::collectives
