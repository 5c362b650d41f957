// Pending: completion of one posted piece, whichever Link posted it.
#include "collectives/links/link.h"

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

}  // namespace ringgrad::collectives
