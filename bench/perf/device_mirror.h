// Device buffers for the perf tools' --device cuda: each row's host buffer gets a device twin
// (copied in before the call, out for the #wrong check); with --device cpu the host buffer is
// used as it is.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace ringgrad::bench {

/// The CUDA device of this rank: LOCAL_RANK (else `rank`) modulo the GPUs visible. Throws
/// std::runtime_error when there is none or the build has no CUDA.
int pick_device(int rank);

class DeviceMirror {
 public:
  /// Mirrors `host` on `device` (collectives::kHost: no mirror). Throws transport::CudaError.
  DeviceMirror(std::vector<std::byte>& host, int device);
  ~DeviceMirror();
  DeviceMirror(const DeviceMirror&) = delete;
  DeviceMirror& operator=(const DeviceMirror&) = delete;

  /// What the collective gets: the device twin, or the host buffer.
  std::byte* data() const { return data_; }
  /// Copies the device twin back into the host buffer (nothing for host memory).
  void to_host();

 private:
  struct Memory;
  std::vector<std::byte>& host_;
  std::unique_ptr<Memory> memory_;
  std::byte* data_;
};

}  // namespace ringgrad::bench
