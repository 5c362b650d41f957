// NCCL in non-blocking mode (config.blocking = 0): every call returns at once and is then
// polled with ncclCommGetAsyncError and cudaStreamQuery against a deadline, so a dead peer
// ends in ncclCommAbort and a TransportError rather than a hang.
#include "collectives/backends/nccl_backend.h"

#include <nccl.h>

#include <thread>
#include <vector>

#include <fmt/format.h>

#include "collectives/reduce/reduce_kernel_cuda.h"

namespace ringgrad::collectives {
namespace {

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat64: return ncclFloat64;
    case DType::kFloat16: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kInt32: return ncclInt32;
    case DType::kInt64: return ncclInt64;
    case DType::kUInt8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return ncclSum;  // AVG: divided afterwards, see run()
    case ReduceOp::PRODUCT: return ncclProd;
    case ReduceOp::MIN: return ncclMin;
    case ReduceOp::MAX: return ncclMax;
  }
  return ncclSum;
}

struct BusId {
  char id[32];
};

int select_device(int device) {
  transport::cuda_check(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device));
  return device;
}

}  // namespace

NcclBackend::NcclBackend(transport::Store& store, int rank, int world_size, int device,
                         std::chrono::milliseconds timeout, const std::string& key_prefix)
    : rank_(rank), world_size_(world_size), device_(select_device(device)), timeout_(timeout) {
  // NCCL refuses two ranks on one GPU; say so in our words, on every rank, before it does.
  BusId mine{};
  transport::cuda_check(cudaDeviceGetPCIBusId(mine.id, sizeof mine.id, device), "cudaDeviceGetPCIBusId");
  transport::store_set(store, fmt::format("{}/bus/{}", key_prefix, rank), mine);
  std::vector<std::string> bus(static_cast<std::size_t>(world_size));
  for (int q = 0; q < world_size; ++q) {
    bus[static_cast<std::size_t>(q)] = q == rank ? mine.id : transport::store_get<BusId>(store, fmt::format("{}/bus/{}", key_prefix, q)).id;
    for (int k = 0; k < q; ++k)
      if (bus[static_cast<std::size_t>(k)] == bus[static_cast<std::size_t>(q)])
        throw CollectiveError(fmt::format("rank {}: backend nccl needs one GPU per rank, but ranks {} and {} are both on "
                                          "GPU {}; backend ringgrad shares a GPU through CUDA IPC", rank, k, q,
                                          bus[static_cast<std::size_t>(q)]));
  }
  ncclUniqueId id{};
  if (rank == 0) {
    if (ncclResult_t e = ncclGetUniqueId(&id); e != ncclSuccess)
      throw transport::TransportError(fmt::format("rank 0: ncclGetUniqueId: {}", ncclGetErrorString(e)));
    transport::store_set(store, key_prefix + "/unique_id", id);
  } else {
    id = transport::store_get<ncclUniqueId>(store, key_prefix + "/unique_id");
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t e = ncclCommInitRankConfig(&comm_, world_size, id, rank, &config);
  if (e != ncclSuccess && e != ncclInProgress)
    throw transport::TransportError(fmt::format("rank {}: ncclCommInitRankConfig: {}", rank, ncclGetErrorString(e)));
  wait("ncclCommInitRankConfig", false);
}

NcclBackend::~NcclBackend() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
}

void NcclBackend::wait(std::string_view what, bool stream_too) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t e = ncclCommGetAsyncError(comm_, &state);
    const cudaError_t s = stream_too && state == ncclSuccess ? cudaStreamQuery(stream_.get()) : cudaSuccess;
    std::string failure;
    if (e != ncclSuccess) failure = ncclGetErrorString(e);
    else if (state != ncclSuccess && state != ncclInProgress) failure = ncclGetErrorString(state);
    else if (s != cudaSuccess && s != cudaErrorNotReady) failure = cudaGetErrorString(s);
    else if (state == ncclSuccess && s == cudaSuccess) return;
    else if (std::chrono::steady_clock::now() > deadline)
      failure = fmt::format("not finished after {} ms (is a peer dead?)", timeout_.count());
    if (!failure.empty()) {
      ncclCommAbort(comm_);  // frees the communicator and unblocks its kernels
      comm_ = nullptr;
      cudaGetLastError();
      throw transport::TransportError(fmt::format("rank {}: NCCL {}: {}; the NCCL communicator was aborted", rank_,
                                                  what, failure));
    }
    std::this_thread::yield();
  }
}

namespace {

// NCCL has no gather, scatter or all-to-all: they are point-to-point transfers posted as one
// group (ncclGroupStart/End), as nccl-tests builds them.
ncclResult_t grouped_send_recv(ncclComm_t comm, cudaStream_t s, int rank, int world_size, CollKind kind,
                               const CollArgs& a, ncclDataType_t t) {
  const std::size_t block = a.count * dtype_size(a.dtype);
  const bool root = rank == a.root;
  if (kind == CollKind::kAllToAll && a.send == a.recv && block > 0)
    throw CollectiveError(fmt::format("rank {}: all_to_all in place on backend nccl: grouped ncclSend/Recv would "
                                      "overwrite blocks still to be sent; pass separate send and recv buffers", rank));
  ncclResult_t e = ncclGroupStart();
  for (int q = 0; q < world_size && e == ncclSuccess; ++q) {
    const std::size_t at = static_cast<std::size_t>(q) * block;
    if (kind == CollKind::kAllToAll) {
      e = ncclSend(a.send + at, a.count, t, q, comm, s);
      if (e == ncclSuccess) e = ncclRecv(a.recv + at, a.count, t, q, comm, s);
    } else if (kind == CollKind::kGather) {
      if (q == a.root) e = ncclSend(a.send, a.count, t, q, comm, s);
      if (root && e == ncclSuccess) e = ncclRecv(a.recv + at, a.count, t, q, comm, s);
    } else {  // scatter
      if (root) e = ncclSend(a.send + at, a.count, t, q, comm, s);
      if (q == a.root && e == ncclSuccess) e = ncclRecv(a.recv, a.count, t, q, comm, s);
    }
  }
  const ncclResult_t end = ncclGroupEnd();
  return e != ncclSuccess ? e : end;
}

}  // namespace

void NcclBackend::run(CollKind kind, Algo, const CollArgs& a, int peer, uint64_t) {
  if (comm_ == nullptr)
    throw transport::TransportError(fmt::format("rank {}: the NCCL communicator was aborted by an earlier error", rank_));
  transport::cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  const cudaStream_t s = stream_.get();
  const ncclDataType_t t = nccl_type(a.dtype);
  const ncclRedOp_t op = nccl_op(a.op);
  const std::size_t n = a.count;
  ncclResult_t e = ncclSuccess;
  switch (kind) {
    case CollKind::kBroadcast: e = ncclBroadcast(a.send, a.recv, n, t, a.root, comm_, s); break;
    case CollKind::kReduce: e = ncclReduce(a.send, a.recv, n, t, op, a.root, comm_, s); break;
    case CollKind::kAllReduce: e = ncclAllReduce(a.send, a.recv, n, t, op, comm_, s); break;
    case CollKind::kAllGather: e = ncclAllGather(a.send, a.recv, n, t, comm_, s); break;
    case CollKind::kReduceScatter: e = ncclReduceScatter(a.send, a.recv, n, t, op, comm_, s); break;
    case CollKind::kSend: e = ncclSend(a.send, n, t, peer, comm_, s); break;
    case CollKind::kRecv: e = ncclRecv(a.recv, n, t, peer, comm_, s); break;
    case CollKind::kGather:
    case CollKind::kScatter:
    case CollKind::kAllToAll: e = grouped_send_recv(comm_, s, rank_, world_size_, kind, a, t); break;
    case CollKind::kBarrier:  // never here: barriers have no buffers
    case CollKind::kBatchSendRecv: break;  // run_batch
    case CollKind::kAllToAllV: break;      // host buffers only
  }
  const std::string what = fmt::format("{} of {} elements", coll_name(kind), n);
  check_enqueued(e, what);
  wait(what, false);
  if (a.op == ReduceOp::AVG && (kind == CollKind::kAllReduce || kind == CollKind::kReduceScatter ||
                                (kind == CollKind::kReduce && rank_ == a.root)))
    divide_for_avg_on_device(a.recv, n, a.dtype, a.op, world_size_, s);
  wait(what, true);
}

void NcclBackend::run_batch(std::span<const P2POp> ops, uint64_t) {
  if (comm_ == nullptr)
    throw transport::TransportError(fmt::format("rank {}: the NCCL communicator was aborted by an earlier error", rank_));
  transport::cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  const cudaStream_t s = stream_.get();
  ncclResult_t e = ncclGroupStart();
  for (std::size_t i = 0; i < ops.size() && e == ncclSuccess; ++i) {
    const Buffer& b = ops[i].buffer;
    e = ops[i].is_send ? ncclSend(b.data, b.count, nccl_type(b.dtype), ops[i].peer, comm_, s)
                       : ncclRecv(b.data, b.count, nccl_type(b.dtype), ops[i].peer, comm_, s);
  }
  const ncclResult_t end = ncclGroupEnd();
  const std::string what = fmt::format("batch of {} sends and receives", ops.size());
  check_enqueued(e == ncclSuccess ? end : e, what);
  wait(what, true);
}

void NcclBackend::check_enqueued(int result, const std::string& what) {
  const auto e = static_cast<ncclResult_t>(result);
  if (e == ncclSuccess || e == ncclInProgress) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
  throw transport::TransportError(fmt::format("rank {}: NCCL {}: {}", rank_, what, ncclGetErrorString(e)));
}

}  // namespace ringgrad::collectives
