// The memory half of the host Links: memcpy for local copies, the CPU loop for the AVG division,
// and the Communicator's growing temporary buffer.
#include "collectives/links/host_memory_link.h"

#include <cstring>

#include "collectives/reduce/reduce_kernel.h"

namespace ringgrad::collectives {

void HostMemoryLink::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst != src && bytes > 0) std::memcpy(dst, src, bytes);
}

void HostMemoryLink::reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) {
  combine(dst, a, b, count, dtype, op);
}

void HostMemoryLink::divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) {
  collectives::divide_for_avg(data, count, dtype, op, world_size);
}

std::byte* HostMemoryLink::workspace(std::size_t bytes) {
  if (buffers_.workspace.size() < bytes) buffers_.workspace.resize(bytes);
  return buffers_.workspace.data();
}

}  // namespace ringgrad::collectives
