// Device buffers in a group communicator, through host memory. A group's messages share the
// parent's connections on a stream of their own, which the device links (CUDA IPC slots and
// their control messages, links/device_link.h) do not speak; so a group's call on device
// buffers copies this rank's device bytes to host memory, runs the host algorithm over the
// group's link as for host buffers, and copies the results back to the device. Correct for any
// placement of the GPUs; the price is two synchronous copies over PCIe per call beside the
// host transfer (a tensor-parallel activation of 64 x 256 x 384 floats, 25 MB, is about 2 ms
// each way at 12 GB/s).
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/task.h"

namespace ringgrad::collectives {

class HostStaging {
 public:
  /// Points `task`'s buffers (this rank `rank` of `world_size`) at host copies of its device
  /// buffers, the bytes it sends (and what its receive buffers held, for in-place calls) copied
  /// in, and makes it a host call. Throws transport::CudaError when a copy fails, CollectiveError
  /// in a build without CUDA.
  HostStaging(Task& task, int rank, int world_size);
  /// Copies what the call received back into the device buffers (synchronous).
  void finish();

 private:
  struct Staged {
    std::byte* device;         // the caller's device bytes
    std::vector<std::byte> host;
    bool received;             // copied back by finish()
  };
  // A host copy of `bytes` at `device`, its contents copied in; returns the host pointer.
  std::byte* stage(const std::byte* device, std::size_t bytes, bool received);

  int device_;
  std::vector<Staged> staged_;
};

}  // namespace ringgrad::collectives
