// Pending: completion of one posted piece, whichever Link posted it.
#include "collectives/link.h"

#include <algorithm>
#include <utility>

namespace ringgrad::collectives {

void Pending::wait() {
  if (deferred_) std::exchange(deferred_, nullptr)();
  request_.wait();
}

void wait_all(std::vector<Pending>& pending) {
  for (auto& p : pending) p.wait();
  pending.clear();
}

void Link::defer_recv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) {
  if (from < 0) return;
  auto* p = static_cast<std::byte*>(data);
  for (std::size_t off = 0; off < bytes; off += chunk_bytes()) {
    const std::size_t n = std::min(chunk_bytes(), bytes - off);
    pending.emplace_back(std::function<void()>([this, from, p, off, n] { recv(from, p + off, n); }));
  }
}

}  // namespace ringgrad::collectives
