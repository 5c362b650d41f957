// HostLink: chunked point-to-point transfers over TCP with receive-side reduction.
#include "collectives/links/host_link.h"

#include <algorithm>

#include <fmt/format.h>

#include "collectives/reduce/reduce_kernel.h"
#include "transport/config.h"
#include "transport/error.h"

namespace ringgrad::collectives {

HostLink::HostLink(transport::Transport& transport, const Group& group, uint64_t tag, std::size_t chunk_bytes,
                   HostBuffers& buffers)
    : HostMemoryLink(group.rank, group.size, chunk_bytes, buffers), transport_(transport), group_(group), tag_(tag) {}

void HostLink::isend(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) {
  if (to < 0) return;
  const auto* p = static_cast<const std::byte*>(data);
  for (std::size_t off = 0; off < bytes; off += chunk_bytes())
    pending.emplace_back(transport_.isend(group_.job_rank(to), {p + off, std::min(chunk_bytes(), bytes - off)}, tag_, group_.stream));
}

void HostLink::irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) {
  if (from < 0) return;
  auto* p = static_cast<std::byte*>(data);
  for (std::size_t off = 0; off < bytes; off += chunk_bytes())
    pending.emplace_back(transport_.irecv(group_.job_rank(from), {p + off, std::min(chunk_bytes(), bytes - off)}, tag_, group_.stream));
}

// Messages up to this size fit the peer's socket buffer (loopback: 128 KiB), so a blocking send
// cannot wait on the peer's receive: both ranks may send first, then receive, all on their own
// thread, which saves two hand-offs to the progress thread on the latency path.
// The same limit below which a blocking receive polls (transport/config.h).
constexpr std::size_t kEagerBytes = transport::kPolledReceiveBytes;

std::size_t HostLink::eager_bytes() const { return kEagerBytes; }

void HostLink::post_send(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) {
  if (to < 0 || bytes == 0) return;  // the receiver skips empty transfers too
  if (bytes <= kEagerBytes && bytes <= chunk_bytes())
    transport_.send(group_.job_rank(to), {static_cast<const std::byte*>(data), bytes}, tag_, group_.stream);
  else
    isend(to, data, bytes, pending);
}

// Sends go to the progress thread while this thread receives (blocking calls on an idle channel
// run on the caller's thread): the two copies of loopback TCP run on two threads.
void HostLink::send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                     std::size_t recv_bytes) {
  std::vector<Pending> sends;
  post_send(to, send, send_bytes, sends);
  if (from >= 0) receive(from, {static_cast<std::byte*>(recv), recv_bytes});
  wait_all(sends);
}

void HostLink::receive(int from, std::span<std::byte> into) {
  for (std::size_t off = 0; off < into.size(); off += chunk_bytes())
    transport_.recv(group_.job_rank(from), {into.data() + off, std::min(chunk_bytes(), into.size() - off)}, tag_,
                    group_.stream);
}

// A small head and body travel as one message (a second message on loopback TCP cost about as
// much again as the first: 32 B all-reduces with the argument check took 25 us, 12 without);
// larger ones as two, in order (post_send: the larger through the progress thread). The receiver takes the next
// message whatever its length up to the largest that may carry both: past the head, the body.
void HostLink::send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                                std::span<std::byte> their_head, const BodyDestination& body_for) {
  std::vector<Pending> sends;
  std::vector<std::byte>& framed = buffers().framed;
  const std::size_t one_message = std::min(kEagerBytes, chunk_bytes());
  if (to >= 0 && head.size() + body.size() <= one_message) {
    framed.assign(head.begin(), head.end());
    framed.insert(framed.end(), body.begin(), body.end());
    transport_.send(group_.job_rank(to), framed, tag_, group_.stream);  // eager: returns once sent
  } else {
    post_send(to, head.data(), head.size(), sends);
    post_send(to, body.data(), body.size(), sends);
  }
  if (from >= 0) {
    // The sender's chunk size may differ from this rank's (ranks that disagree on it must still
    // read each other's heads, to learn why): take anything up to kEagerBytes.
    framed.resize(std::max(kEagerBytes, their_head.size()));
    const std::size_t got = transport_.recv_up_to(group_.job_rank(from), framed, tag_, group_.stream);
    if (got < their_head.size())
      throw transport::TransportError(fmt::format("rank {}: rank {} sent a head of {} bytes, expected {} (the ranks "
                                                  "disagree on the collective)", rank(), from, got, their_head.size()));
    std::copy_n(framed.begin(), their_head.size(), their_head.begin());
    const std::span<std::byte> their_body = body_for(their_head);
    const std::size_t came = got - their_head.size();
    if (came > 0 && came != their_body.size())
      throw transport::TransportError(fmt::format("rank {}: rank {} sent {} bytes behind its head, which says {} (the "
                                                  "ranks disagree on the collective)", rank(), from, came,
                                                  their_body.size()));
    if (came > 0) std::copy_n(framed.begin() + static_cast<std::ptrdiff_t>(their_head.size()), came, their_body.begin());
    else if (!their_body.empty()) transport_.recv(group_.job_rank(from), their_body, tag_, group_.stream);
  }
  wait_all(sends);
}

void HostLink::send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst,
                            const void* a, std::size_t count, DType dtype, ReduceOp op) {
  std::vector<Pending> sends;
  post_send(to, send, send_bytes, sends);
  const std::size_t esize = dtype_size(dtype);
  const std::size_t bytes = from < 0 ? 0 : count * esize;
  std::vector<std::byte>& scratch = buffers().scratch;
  if (scratch.size() < chunk_bytes()) scratch.resize(chunk_bytes());
  // Piece k is received into scratch (still in cache) and reduced at once; meanwhile the peer
  // keeps writing piece k+1 into the socket buffer, so reduction overlaps the transfer.
  for (std::size_t off = 0; off < bytes; off += chunk_bytes()) {
    const std::size_t n = std::min(chunk_bytes(), bytes - off);
    transport_.recv(group_.job_rank(from), {scratch.data(), n}, tag_, group_.stream);
    combine(static_cast<std::byte*>(dst) + off, static_cast<const std::byte*>(a) + off, scratch.data(), n / esize,
            dtype, op);
  }
  wait_all(sends);
}

}  // namespace ringgrad::collectives
