// The two device backends behind one interface, and what a build without CUDA or NCCL says.
#include "collectives/backends/device_backend.h"

#include <fmt/format.h>

#include "collectives/device_check.h"

#if RINGGRAD_HAVE_CUDA
#include "collectives/links/device_link.h"
#include "collectives/links/device_peers.h"
#endif
#if RINGGRAD_HAVE_NCCL
#include "collectives/backends/nccl_backend.h"
#endif

namespace ringgrad::collectives {
namespace {

#if RINGGRAD_HAVE_CUDA
// ringgrad's own algorithms on device memory: the same run_collective as for host memory.
class RinggradDevice final : public DeviceBackend {
 public:
  RinggradDevice(transport::Transport& transport, int device, std::size_t chunk_bytes, HostLayout hosts)
      : transport_(transport), peers_(transport, device, chunk_bytes), hosts_(std::move(hosts)) {}

  void run(CollKind kind, Algo algo, const CollArgs& args, int peer, uint64_t tag) override {
    // The device is per thread, and calls run on the caller's or the worker's thread.
    transport::cuda_check(cudaSetDevice(peers_.device()), "cudaSetDevice");
    DeviceLink link(peers_, transport_, tag);
    run_collective(link, kind, algo, args, peer, hosts_);
    link.finish();
  }

  // Each send runs to completion when posted (DeviceLink::isend), so a batch whose sends to a
  // peer overflow its inbox (4 chunks) while that peer sends too waits until the timeout.
  void run_batch(std::span<const P2POp> ops, uint64_t tag) override {
    transport::cuda_check(cudaSetDevice(peers_.device()), "cudaSetDevice");
    DeviceLink link(peers_, transport_, tag);
    irecv_isend_waitall(link, ops);
    link.finish();
  }

 private:
  transport::Transport& transport_;
  DevicePeers peers_;
  HostLayout hosts_;
};
#endif

}  // namespace

void check_backend(Backend backend, int rank) {
  if (backend == Backend::kMpi && !RINGGRAD_HAVE_MPI)
    throw CollectiveError(fmt::format("rank {}: backend mpi (--backend or RINGGRAD_BACKEND) but ringgrad was built without MPI "
                                      "(install libopenmpi-dev and rebuild; or use backend ringgrad)", rank));
  if (backend != Backend::kNccl) return;
  if (!RINGGRAD_HAVE_NCCL)
    throw CollectiveError(fmt::format("rank {}: backend nccl (--backend or RINGGRAD_BACKEND) but ringgrad was built without NCCL "
                                      "(it needs CUDA and libnccl; use backend ringgrad)", rank));
  if (cuda_device_count() == 0)
    throw CollectiveError(fmt::format("rank {}: backend nccl (--backend or RINGGRAD_BACKEND) needs a visible GPU and this process "
                                      "sees none (CUDA_VISIBLE_DEVICES, driver?)", rank));
}

std::unique_ptr<DeviceBackend> make_device_backend(transport::Transport& transport, const CommOptions& options,
                                                   int device, const HostLayout& hosts) {
#if RINGGRAD_HAVE_NCCL
  if (options.backend == Backend::kNccl)
    return std::make_unique<NcclBackend>(transport.store(), transport.rank(), transport.world_size(), device,
                                         transport.timeout(), "collectives/nccl");
#endif
#if RINGGRAD_HAVE_CUDA
  return std::make_unique<RinggradDevice>(transport, device, options.device_chunk_bytes, hosts);
#else
  static_cast<void>(options);
  static_cast<void>(hosts);
  throw CollectiveError(fmt::format("rank {}: device buffers (cuda:{}) but ringgrad was built without CUDA",
                                    transport.rank(), device));
#endif
}

}  // namespace ringgrad::collectives
