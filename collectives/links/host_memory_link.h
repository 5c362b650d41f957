// HostMemoryLink: what every Link over host memory does alike (local copies, the AVG division,
// temporaries), whichever way its pieces travel: TCP (HostLink) or shared memory (ShmLink).
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/links/link.h"

namespace ringgrad::collectives {

class HostMemoryLink : public Link {
 public:
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void finalize(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) override;
  std::byte* workspace(std::size_t bytes) override;

 protected:
  using Link::Link;

 private:
  std::vector<std::byte> workspace_;
};

}  // namespace ringgrad::collectives
