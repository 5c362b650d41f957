// HostMemoryLink: what every Link over host memory does alike (local copies, the AVG division,
// temporaries), whichever way its pieces travel: TCP (HostLink) or shared memory (ShmLink).
// A link lives for one collective; the memory it reuses (HostBuffers) lives in the
// Communicator, so a temporary of 16 MiB is allocated and faulted in once, not once per call.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/links/link.h"

namespace ringgrad::collectives {

/// Host memory that links reuse from call to call; used by one task at a time. Each grows to
/// the largest size asked for and stays.
struct HostBuffers {
  std::vector<std::byte> scratch;    // HostLink: one received piece (chunk_bytes)
  std::vector<std::byte> framed;     // HostLink, ShmLink: a head and its body as one message
  std::vector<std::byte> workspace;  // Link::workspace: an algorithm's temporaries
};

class HostMemoryLink : public Link {
 public:
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) override;
  void divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) override;
  std::byte* workspace(std::size_t bytes) override;

 protected:
  /// `buffers` must outlive the link.
  HostMemoryLink(int rank, int world_size, std::size_t chunk_bytes, HostBuffers& buffers)
      : Link(rank, world_size, chunk_bytes), buffers_(buffers) {}
  HostBuffers& buffers() { return buffers_; }

 private:
  HostBuffers& buffers_;
};

}  // namespace ringgrad::collectives
