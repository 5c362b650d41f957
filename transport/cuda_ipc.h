// CUDA handles for transfers between processes: move-only owners of device memory, pinned host
// memory, streams and events, and of another process's memory and events opened from CUDA IPC
// handles (cudaIpcMemHandle_t, cudaIpcEventHandle_t) that travel through the rendezvous Store.
// Built only with CUDA (RINGGRAD_HAVE_CUDA=1). Every CUDA call is checked.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "transport/error.h"
#include "transport/store.h"

namespace ringgrad::transport {

/// A CUDA runtime call failed; the message names the call and CUDA's error string.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws CudaError("<what>: <CUDA's error string>") unless e is cudaSuccess.
void cuda_check(cudaError_t e, std::string_view what);

/// `bytes` of device memory on the current device (cudaMalloc), freed by the destructor.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  std::byte* get() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// `bytes` of page-locked host memory (cudaMallocHost), so copies to and from it are DMA.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  explicit PinnedMemory(std::size_t bytes);
  ~PinnedMemory();
  PinnedMemory(PinnedMemory&& other) noexcept;
  PinnedMemory& operator=(PinnedMemory&& other) noexcept;
  std::byte* get() const { return data_; }

 private:
  std::byte* data_ = nullptr;
};

/// A stream of the current device that does not synchronise with the legacy default stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// An event without timing; made with cudaEventInterprocess so another process can wait on it.
/// Also what IpcEvent opens: an event of another process (destroying it leaves the owner's).
class Event {
 public:
  /// A new interprocess event of the current device.
  Event();
  /// Opens the event another process exported as `handle`.
  explicit Event(const cudaIpcEventHandle_t& handle);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  cudaEvent_t get() const { return event_; }
  /// The handle another process on this host opens this event with.
  cudaIpcEventHandle_t export_handle() const;

 private:
  cudaEvent_t event_ = nullptr;
};

/// Device memory of another process on this host, mapped into this one from its handle
/// (cudaIpcOpenMemHandle with peer access enabled lazily); unmapped by the destructor.
class IpcMemory {
 public:
  IpcMemory() = default;
  explicit IpcMemory(const cudaIpcMemHandle_t& handle);
  ~IpcMemory();
  IpcMemory(IpcMemory&& other) noexcept;
  IpcMemory& operator=(IpcMemory&& other) noexcept;
  std::byte* get() const { return data_; }

 private:
  std::byte* data_ = nullptr;
};

/// The handle another process on this host maps `memory` with (the whole allocation).
cudaIpcMemHandle_t export_memory(const DeviceMemory& memory);

/// Polls cudaStreamQuery until `stream` is idle. Never blocks without bound: throws
/// TransportError naming `what` when it is still busy after `timeout` (it may wait on an event
/// of a dead process), CudaError when its work failed.
void wait_stream(cudaStream_t stream, std::chrono::milliseconds timeout, std::string_view what);

/// Publishes a trivially copyable value (e.g. a struct of IPC handles) under `key`.
template <typename T>
void store_set(Store& store, std::string_view key, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  store.set(key, std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
}

/// Waits for `key` and returns its value; throws TransportError when its size is not sizeof(T).
template <typename T>
T store_get(Store& store, std::string_view key) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::string bytes = store.get(key);
  if (bytes.size() != sizeof(T))
    throw TransportError("store key '" + std::string(key) + "' holds " + std::to_string(bytes.size()) +
                         " bytes, expected " + std::to_string(sizeof(T)) + " (a different ringgrad build?)");
  T value;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

}  // namespace ringgrad::transport
