// CUDA RAII handles and IPC export/import. Destructors release without throwing (an error
// there is dropped: the process may be tearing down after a device fault).
#include "transport/cuda_ipc.h"

#include <thread>
#include <utility>

namespace ringgrad::transport {

void cuda_check(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear the error so later calls do not report it again
  throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

DeviceMemory::DeviceMemory(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes");
  data_ = static_cast<std::byte*>(p);
}
DeviceMemory::~DeviceMemory() {
  if (data_ != nullptr) cudaFree(data_);
}
DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  return *this;
}

PinnedMemory::PinnedMemory(std::size_t bytes) {
  if (bytes == 0) return;
  void* p = nullptr;
  cuda_check(cudaMallocHost(&p, bytes), "cudaMallocHost of " + std::to_string(bytes) + " bytes");
  data_ = static_cast<std::byte*>(p);
}
PinnedMemory::~PinnedMemory() {
  if (data_ != nullptr) cudaFreeHost(data_);
}
PinnedMemory::PinnedMemory(PinnedMemory&& o) noexcept : data_(std::exchange(o.data_, nullptr)) {}
PinnedMemory& PinnedMemory::operator=(PinnedMemory&& o) noexcept {
  std::swap(data_, o.data_);
  return *this;
}

Stream::Stream() { cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Event::Event() {
  cuda_check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming | cudaEventInterprocess),
             "cudaEventCreateWithFlags(interprocess)");
}
Event::Event(const cudaIpcEventHandle_t& handle) {
  cuda_check(cudaIpcOpenEventHandle(&event_, handle), "cudaIpcOpenEventHandle");
}
Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}
Event::Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
Event& Event::operator=(Event&& o) noexcept {
  std::swap(event_, o.event_);
  return *this;
}
cudaIpcEventHandle_t Event::export_handle() const {
  cudaIpcEventHandle_t h{};
  cuda_check(cudaIpcGetEventHandle(&h, event_), "cudaIpcGetEventHandle");
  return h;
}

IpcMemory::IpcMemory(const cudaIpcMemHandle_t& handle) {
  void* p = nullptr;
  cuda_check(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  data_ = static_cast<std::byte*>(p);
}
IpcMemory::~IpcMemory() {
  if (data_ != nullptr) cudaIpcCloseMemHandle(data_);
}
IpcMemory::IpcMemory(IpcMemory&& o) noexcept : data_(std::exchange(o.data_, nullptr)) {}
IpcMemory& IpcMemory::operator=(IpcMemory&& o) noexcept {
  std::swap(data_, o.data_);
  return *this;
}

cudaIpcMemHandle_t export_memory(const DeviceMemory& memory) {
  cudaIpcMemHandle_t h{};
  cuda_check(cudaIpcGetMemHandle(&h, memory.get()), "cudaIpcGetMemHandle");
  return h;
}

void wait_stream(cudaStream_t stream, std::chrono::milliseconds timeout, std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda_check(e, std::string(what) + ": the stream failed");
    if (std::chrono::steady_clock::now() > deadline)
      throw TransportError(std::string(what) + ": device work did not finish within " +
                           std::to_string(timeout.count()) + " ms (a peer's event never came: is the peer dead?)");
    std::this_thread::yield();
  }
}

}  // namespace ringgrad::transport
