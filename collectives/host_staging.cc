// HostStaging: each buffer of the call this rank uses, by kind (NCCL's counts: Task::args.count
// is per rank where a buffer holds p blocks), copied to host memory and back.
#include "collectives/host_staging.h"

#include <fmt/format.h>

#include "collectives/algo.h"
#include "collectives/collective_error.h"

#if RINGGRAD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "transport/cuda_ipc.h"
#endif

namespace ringgrad::collectives {
namespace {

// Bytes copied between host and device, one direction; throws without CUDA.
void copy_bytes(void* dst, const void* src, std::size_t bytes, bool to_host, int device) {
#if RINGGRAD_HAVE_CUDA
  transport::cuda_check(cudaSetDevice(device), "cudaSetDevice for a group's staged call");
  transport::cuda_check(cudaMemcpy(dst, src, bytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice),
                        "cudaMemcpy of a group's staged call");
#else
  static_cast<void>(dst), static_cast<void>(src), static_cast<void>(bytes), static_cast<void>(to_host);
  throw CollectiveError(fmt::format("device buffers on cuda:{}: built without CUDA", device));
#endif
}

}  // namespace

std::byte* HostStaging::stage(const std::byte* device, std::size_t bytes, bool received) {
  Staged s{const_cast<std::byte*>(device), std::vector<std::byte>(bytes), received};
  if (bytes > 0) copy_bytes(s.host.data(), device, bytes, true, device_);
  staged_.push_back(std::move(s));
  return staged_.back().host.data();
}

HostStaging::HostStaging(Task& task, int rank, int world_size) : device_(task.device) {
  if (task.kind == CollKind::kBatchSendRecv) {
    staged_.reserve(task.ops.size());
    for (P2POp& op : task.ops) {
      const std::size_t bytes = op.buffer.count * dtype_size(op.buffer.dtype);
      op.buffer.data = stage(static_cast<std::byte*>(op.buffer.data), bytes, !op.is_send);
      op.buffer.device = kHost;
    }
    task.device = kHost;
    return;
  }
  CollArgs& a = task.args;
  const std::size_t block = a.count * dtype_size(a.dtype), p = static_cast<std::size_t>(world_size);
  const CollKind k = task.kind;
  const bool blocks_in = k == CollKind::kReduceScatter || k == CollKind::kScatter || k == CollKind::kAllToAll;
  const bool blocks_out = k == CollKind::kAllGather || k == CollKind::kGather || k == CollKind::kAllToAll;
  const bool collective = is_collective(k);
  const bool sends = collective ? uses_send(k, rank, a.root) : k == CollKind::kSend;
  const bool receives = collective ? uses_recv(k, rank, a.root) : k == CollKind::kRecv;
  const std::size_t send_bytes = sends ? block * (blocks_in ? p : 1) : 0;
  const std::size_t recv_bytes = receives ? block * (blocks_out ? p : 1) : 0;
  staged_.reserve(2);
  std::byte* recv = recv_bytes > 0 ? stage(a.recv, recv_bytes, true) : nullptr;
  const std::byte* send = nullptr;
  if (send_bytes > 0) {
    // In place (send inside recv, as validate allows): the same host bytes, at the same offset.
    const bool inside = recv != nullptr && a.send >= a.recv && a.send + send_bytes <= a.recv + recv_bytes;
    send = inside ? recv + (a.send - a.recv) : stage(a.send, send_bytes, false);
  }
  a.send = send;
  a.recv = recv;
  task.device = kHost;
}

void HostStaging::finish() {
  for (Staged& s : staged_)
    if (s.received && !s.host.empty()) copy_bytes(s.device, s.host.data(), s.host.size(), false, device_);
}

}  // namespace ringgrad::collectives
