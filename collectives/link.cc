// Chunked point-to-point transfers for the algorithms, with receive-side reduction.
#include "collectives/link.h"

#include <algorithm>
#include <array>
#include <optional>

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

void Link::send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                     std::size_t recv_bytes) {
  std::vector<transport::Request> pending;
  irecv(from, recv, recv_bytes, pending);
  isend(to, send, send_bytes, pending);
  wait_all(pending);
}

void Link::send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst,
                            const void* a, std::size_t count, DType dtype, ReduceOp op) {
  std::vector<transport::Request> sends;
  isend(to, send, send_bytes, sends);
  const std::size_t esize = dtype_size(dtype);
  const std::size_t bytes = from < 0 ? 0 : count * esize;
  if (scratch_.size() < 2 * chunk_bytes_) scratch_.resize(2 * chunk_bytes_);
  auto piece = [&](std::size_t k) { return std::min(chunk_bytes_, bytes - k * chunk_bytes_); };
  auto buffer = [&](std::size_t k) { return scratch_.data() + (k % 2) * chunk_bytes_; };
  const std::size_t pieces = (bytes + chunk_bytes_ - 1) / chunk_bytes_;
  // Two receives in flight: piece k+1 arrives while piece k is being reduced.
  std::array<std::optional<transport::Request>, 2> inflight;
  for (std::size_t k = 0; k < std::min<std::size_t>(2, pieces); ++k)
    inflight[k].emplace(transport_.irecv(from, {buffer(k), piece(k)}, tag_));
  for (std::size_t k = 0; k < pieces; ++k) {
    inflight[k % 2]->wait();
    const std::size_t off = k * chunk_bytes_;
    combine(static_cast<std::byte*>(dst) + off, static_cast<const std::byte*>(a) + off, buffer(k),
            piece(k) / esize, dtype, op);
    if (k + 2 < pieces) inflight[k % 2].emplace(transport_.irecv(from, {buffer(k), piece(k + 2)}, tag_));
  }
  wait_all(sends);
}

}  // namespace ringgrad::collectives
