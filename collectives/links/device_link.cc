// DeviceLink's protocol: one polling loop per send_recv drives the outgoing and the incoming
// transfer piece by piece, so two ranks sending to each other never wait on each other's
// credits (the ring's and halving-doubling's pattern). Control messages are 16 bytes.
#include "collectives/links/device_link.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "collectives/reduce/reduce_kernel_cuda.h"

namespace ringgrad::collectives {

using transport::cuda_check;

DeviceLink::DeviceLink(DevicePeers& peers, transport::Transport& transport, uint64_t tag)
    : PollingLink(transport.rank(), transport.world_size(), peers.chunk_bytes()),
      peers_(peers),
      transport_(transport),
      tag_(tag),
      timeout_(transport.timeout()) {}

// Consumes the next control message from `peer` if one arrived; posts its receive first when
// one is due (`needed`), never otherwise, so none is left posted when the collective ends.
bool DeviceLink::poll_control(int peer, bool needed) {
  Peer& p = peers_.peer(peer);
  if (!p.control_posted) {
    if (!needed) return false;
    p.control = transport_.irecv(peer, std::as_writable_bytes(std::span(&p.control_message, 1)), tag_);
    p.control_posted = true;
  }
  if (!p.control.test()) return false;
  p.control_posted = false;
  const ControlMessage& m = p.control_message;
  if (m.kind == kReady && m.slot == (p.consumed + p.announced.size()) % kSlots && m.bytes <= chunk_bytes())
    p.announced.push_back(m.bytes);
  else if (m.kind == kCredit && p.acked < p.sent)
    ++p.acked;
  else
    throw transport::TransportError(fmt::format("rank {}: unexpected control message (kind {}, slot {}) from rank {}",
                                                rank(), m.kind, m.slot, peer));
  return true;
}

bool DeviceLink::advance_send(Outgoing& out) {
  Peer& p = peers_.peer(out.to);
  const std::size_t n = std::min(chunk_bytes(), out.bytes - out.done);
  const cudaStream_t s = peers_.stream();
  if (p.path == PeerPath::kIpc) {
    bool moved = poll_control(out.to, p.sent - p.acked == kSlots);
    if (p.sent - p.acked == kSlots) return moved;
    const auto slot = static_cast<std::size_t>(p.sent % kSlots);
    // The slot was consumed (its credit came back); its event says when the peer's reads ended.
    if (p.sent >= kSlots) cuda_check(cudaStreamWaitEvent(s, p.peer_drained[slot].get(), 0), "cudaStreamWaitEvent(drained)");
    cuda_check(cudaMemcpyAsync(p.peer_inbox.get() + slot * chunk_bytes(), out.src + out.done, n, cudaMemcpyDefault, s),
               "cudaMemcpyAsync into the peer's inbox");
    cuda_check(cudaEventRecord(p.filled[slot].get(), s), "cudaEventRecord(filled)");
    const ControlMessage ready{kReady, static_cast<uint32_t>(slot), n};
    transport_.send(out.to, std::as_bytes(std::span(&ready, 1)), tag_);
    ++p.sent;
  } else {
    if (p.staged_send_busy && !p.staged_send.test()) return false;
    p.staged_send_busy = false;
    cuda_check(cudaMemcpyAsync(p.staged_out.get(), out.src + out.done, n, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync to pinned memory");
    transport::wait_stream(s, timeout_, fmt::format("rank {}: staging a piece for rank {}", rank(), out.to));
    p.staged_send = transport_.isend(out.to, {p.staged_out.get(), n}, tag_);
    p.staged_send_busy = true;
  }
  out.done += n;
  return true;
}

bool DeviceLink::advance_recv(Incoming& in) {
  Peer& p = peers_.peer(in.from);
  const std::size_t n = std::min(chunk_bytes(), in.bytes - in.done);
  const cudaStream_t s = peers_.stream();
  const std::byte* piece;
  if (p.path == PeerPath::kIpc) {
    bool moved = poll_control(in.from, p.announced.empty());
    if (p.announced.empty()) return moved;
    if (p.announced.front() != n)
      throw transport::TransportError(fmt::format("rank {}: rank {} sent a piece of {} bytes, expected {} (the ranks "
                                                  "disagree on the collective)", rank(), in.from, p.announced.front(), n));
    const auto slot = static_cast<std::size_t>(p.consumed % kSlots);
    cuda_check(cudaStreamWaitEvent(s, p.peer_filled[slot].get(), 0), "cudaStreamWaitEvent(filled)");
    piece = p.inbox.get() + slot * chunk_bytes();
    if (in.a == nullptr)
      cuda_check(cudaMemcpyAsync(in.dst + in.done, piece, n, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync out of the inbox");
    else
      combine_on_device(in.dst + in.done, in.a + in.done, piece, n / dtype_size(in.dtype), in.dtype, in.op, s);
    cuda_check(cudaEventRecord(p.drained[slot].get(), s), "cudaEventRecord(drained)");
    const ControlMessage credit{kCredit, static_cast<uint32_t>(slot), 0};
    transport_.send(in.from, std::as_bytes(std::span(&credit, 1)), tag_);
    p.announced.pop_front();
    ++p.consumed;
  } else {
    if (!p.staged_recv_posted) {
      p.staged_recv = transport_.irecv(in.from, {p.staged_in.get(), n}, tag_);
      p.staged_recv_posted = true;
    }
    if (!p.staged_recv.test()) return false;
    p.staged_recv_posted = false;
    std::byte* landing = in.a == nullptr ? in.dst + in.done : peers_.staging();
    cuda_check(cudaMemcpyAsync(landing, p.staged_in.get(), n, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync from pinned memory");
    if (in.a != nullptr) combine_on_device(in.dst + in.done, in.a + in.done, landing, n / dtype_size(in.dtype), in.dtype, in.op, s);
    // Pinned and staging memory are reused by the next piece.
    transport::wait_stream(s, timeout_, fmt::format("rank {}: unstaging a piece from rank {}", rank(), in.from));
  }
  in.done += n;
  return true;
}

void DeviceLink::exchange(Outgoing out, Incoming in) {
  auto last = std::chrono::steady_clock::now();
  while (out.done < out.bytes || in.done < in.bytes) {
    bool moved = false;
    if (out.done < out.bytes) moved |= advance_send(out);
    if (in.done < in.bytes) moved |= advance_recv(in);
    const auto now = std::chrono::steady_clock::now();
    if (moved) {
      last = now;
    } else if (now - last > timeout_) {
      throw transport::TransportError(fmt::format(
          "rank {}: device transfer made no progress for {} ms (sending {} of {} bytes to rank {}, receiving {} of {} "
          "bytes from rank {})", rank(), timeout_.count(), out.done, out.bytes, out.to, in.done, in.bytes, in.from));
    } else {
      std::this_thread::yield();
    }
  }
}

void DeviceLink::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst == src || bytes == 0) return;
  cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, peers_.stream()), "cudaMemcpyAsync (local copy)");
}

void DeviceLink::reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) {
  combine_on_device(dst, a, b, count, dtype, op, peers_.stream());
}

void DeviceLink::divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) {
  divide_for_avg_on_device(data, count, dtype, op, world_size, peers_.stream());
}

std::byte* DeviceLink::workspace(std::size_t bytes) { return peers_.workspace(bytes); }

void DeviceLink::finish() {
  auto last = std::chrono::steady_clock::now();
  for (int q = 0; q < world_size(); ++q) {
    if (q == rank()) continue;
    Peer& p = peers_.peer(q);
    while (p.acked < p.sent || p.staged_send_busy) {
      bool moved = false;
      if (p.acked < p.sent) moved = poll_control(q, true);
      if (p.staged_send_busy && p.staged_send.test()) p.staged_send_busy = false, moved = true;
      if (moved) {
        last = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - last > timeout_) {
        throw transport::TransportError(fmt::format(
            "rank {}: rank {} did not return {} inbox slot(s) within {} ms (if these are sends between ranks that "
            "send to each other at once: a device send waits for the peer's receive, so they need batch_send_recv)",
            rank(), q, p.sent - p.acked, timeout_.count()));
      } else {
        std::this_thread::yield();
      }
    }
    if (!p.announced.empty())
      throw transport::TransportError(fmt::format("rank {}: rank {} sent {} piece(s) this collective did not expect",
                                                  rank(), q, p.announced.size()));
  }
  transport::wait_stream(peers_.stream(), timeout_, fmt::format("rank {}: finishing a device collective", rank()));
}

}  // namespace ringgrad::collectives
