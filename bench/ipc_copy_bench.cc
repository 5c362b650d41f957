// ipc_copy_bench: what a CUDA IPC copy costs beside a plain device-to-device copy. Two ranks
// (ringgrad-run --nproc-per-node 2): rank 0 exports a buffer through the store, rank 1 maps it
// and times cudaMemcpyAsync into it against a copy within its own memory, 1 MiB to 1 GiB,
// median of -n copies timed with CUDA events. GB/s = 1e9 bytes/s.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/parse.h"
#include "transport/cuda_ipc.h"
#include "transport/transport.h"

namespace {

using ringgrad::transport::cuda_check;

// Median seconds of `iters` copies of `bytes` from src to dst on `stream`.
double time_copy(std::byte* dst, const std::byte* src, std::size_t bytes, int iters, cudaStream_t stream) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  return times[static_cast<std::size_t>(iters / 2)];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_mib = 1024;
  int iters = 10;
  CLI::App app{"ipc_copy_bench: CUDA IPC copy vs cudaMemcpy device-to-device; run on 2 ranks under ringgrad-run"};
  app.add_option("-e,--max_mib", max_mib, "largest copy in MiB")->capture_default_str();
  app.add_option("-n,--iters", iters, "copies per size (the median is reported)")->capture_default_str();
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  try {
    ringgrad::transport::Transport transport(ringgrad::transport::Config::from_env());
    if (transport.world_size() != 2) throw std::runtime_error("run it on exactly 2 ranks");
    int gpus = 0;
    cuda_check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
    const char* local = std::getenv("LOCAL_RANK");
    const int device = (local != nullptr ? std::atoi(local) : transport.rank()) % gpus;
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    const std::size_t max_bytes = max_mib << 20;
    ringgrad::transport::DeviceMemory mine(max_bytes);
    auto& store = transport.store();
    if (transport.rank() == 0) {
      ringgrad::transport::store_set(store, "ipc_copy_bench/buffer", ringgrad::transport::export_memory(mine));
      store.get("ipc_copy_bench/done", std::chrono::hours(1));  // keep the buffer until rank 1 is done
      return 0;
    }
    const ringgrad::transport::IpcMemory peer(ringgrad::transport::store_get<cudaIpcMemHandle_t>(store, "ipc_copy_bench/buffer"));
    ringgrad::transport::DeviceMemory local_dst(max_bytes);
    ringgrad::transport::Stream stream;
    fmt::print("# ipc_copy_bench: rank 1 on cuda:{} copies into rank 0's buffer (CUDA IPC) and within its own memory\n", device);
    fmt::print("# {:>10} {:>14} {:>14}\n#{:>11} {:>14} {:>14}\n", "size", "local D2D", "CUDA IPC", "(B)", "(GB/s)", "(GB/s)");
    for (std::size_t bytes = 1 << 20; bytes <= max_bytes; bytes *= 4) {
      const double local_s = time_copy(local_dst.get(), mine.get(), bytes, iters, stream.get());
      const double ipc_s = time_copy(peer.get(), mine.get(), bytes, iters, stream.get());
      fmt::print("  {:>10} {:>14.1f} {:>14.1f}\n", bytes, bytes / local_s / 1e9, bytes / ipc_s / 1e9);
      std::fflush(stdout);
    }
    store.set("ipc_copy_bench/done", "1");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ipc_copy_bench: %s\n", e.what());
    return 1;
  }
}
