// Chunked point-to-point transfers for the algorithms, with receive-side reduction.
#include "collectives/link.h"

#include <algorithm>

#include "collectives/reduce_kernel.h"

namespace ringgrad::collectives {

Link::Link(transport::Transport& transport, uint64_t tag, std::size_t chunk_bytes,
           std::vector<std::byte>& scratch)
    : transport_(transport),
      tag_(tag),
      chunk_bytes_(chunk_bytes),
      scratch_(scratch),
      rank_(transport.rank()),
      world_size_(transport.world_size()) {}

void Link::isend(int to, const void* data, std::size_t bytes, std::vector<transport::Request>& pending) {
  if (to < 0) return;
  const auto* p = static_cast<const std::byte*>(data);
  for (std::size_t off = 0; off < bytes; off += chunk_bytes_)
    pending.push_back(transport_.isend(to, {p + off, std::min(chunk_bytes_, bytes - off)}, tag_));
}

void Link::irecv(int from, void* data, std::size_t bytes, std::vector<transport::Request>& pending) {
  if (from < 0) return;
  auto* p = static_cast<std::byte*>(data);
  for (std::size_t off = 0; off < bytes; off += chunk_bytes_)
    pending.push_back(transport_.irecv(from, {p + off, std::min(chunk_bytes_, bytes - off)}, tag_));
}

void wait_all(std::vector<transport::Request>& pending) {
  for (auto& r : pending) r.wait();
  pending.clear();
}

// Messages up to this size fit the peer's socket buffer (loopback: 128 KiB), so a blocking send
// cannot wait on the peer's receive: both ranks may send first, then receive, all on their own
// thread, which saves two hand-offs to the progress thread on the latency path.
constexpr std::size_t kEagerBytes = 16 << 10;

void Link::post_send(int to, const void* data, std::size_t bytes, std::vector<transport::Request>& pending) {
  if (to < 0 || bytes == 0) return;  // the receiver skips empty transfers too
  if (bytes <= kEagerBytes && bytes <= chunk_bytes_)
    transport_.send(to, {static_cast<const std::byte*>(data), bytes}, tag_);
  else
    isend(to, data, bytes, pending);
}

// Sends go to the progress thread while this thread receives (blocking calls on an idle channel
// run on the caller's thread): the two copies of loopback TCP run on two threads.
void Link::send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                     std::size_t recv_bytes) {
  std::vector<transport::Request> sends;
  post_send(to, send, send_bytes, sends);
  auto* p = static_cast<std::byte*>(recv);
  if (from >= 0)
    for (std::size_t off = 0; off < recv_bytes; off += chunk_bytes_)
      transport_.recv(from, {p + off, std::min(chunk_bytes_, recv_bytes - off)}, tag_);
  wait_all(sends);
}

void Link::send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst,
                            const void* a, std::size_t count, DType dtype, ReduceOp op) {
  std::vector<transport::Request> sends;
  post_send(to, send, send_bytes, sends);
  const std::size_t esize = dtype_size(dtype);
  const std::size_t bytes = from < 0 ? 0 : count * esize;
  if (scratch_.size() < chunk_bytes_) scratch_.resize(chunk_bytes_);
  // Piece k is received into scratch (still in cache) and reduced at once; meanwhile the peer
  // keeps writing piece k+1 into the socket buffer, so reduction overlaps the transfer.
  for (std::size_t off = 0; off < bytes; off += chunk_bytes_) {
    const std::size_t n = std::min(chunk_bytes_, bytes - off);
    transport_.recv(from, {scratch_.data(), n}, tag_);
    combine(static_cast<std::byte*>(dst) + off, static_cast<const std::byte*>(a) + off, scratch_.data(), n / esize,
            dtype, op);
  }
  wait_all(sends);
}

}  // namespace ringgrad::collectives
