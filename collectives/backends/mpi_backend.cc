// MpiBackend: each CollKind as its MPI call, with ringgrad's in-place layouts turned into
// MPI_IN_PLACE (or a copy where MPI's in-place layout differs from NCCL's).
#include "collectives/backends/mpi_backend.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "collectives/collective_error.h"
#include "collectives/reduce/reduce_kernel.h"
#include "transport/error.h"

namespace ringgrad::collectives {
namespace {

// Element types as MPI moves them; 16-bit floats travel as 16-bit words (not reducible).
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::kFloat32: return MPI_FLOAT;
    case DType::kFloat64: return MPI_DOUBLE;
    case DType::kFloat16:
    case DType::kBFloat16: return MPI_UINT16_T;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kInt64: return MPI_INT64_T;
    case DType::kUInt8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::PRODUCT: return MPI_PROD;
    case ReduceOp::MIN: return MPI_MIN;
    case ReduceOp::MAX: return MPI_MAX;
    default: return MPI_SUM;  // SUM, and AVG before the division
  }
}

bool reduces(CollKind k) { return k == CollKind::kReduce || k == CollKind::kAllReduce || k == CollKind::kReduceScatter; }

void check(int result, int rank, const char* what) {
  if (result == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(result, text, &length);
  throw transport::TransportError(fmt::format("rank {}: {} failed: {}", rank, what, std::string(text, static_cast<std::size_t>(length))));
}

int mpi_count(std::size_t count, int rank) {
  if (count > static_cast<std::size_t>(INT32_MAX))
    throw CollectiveError(fmt::format("rank {}: backend mpi: {} elements do not fit MPI's int count", rank, count));
  return static_cast<int>(count);
}

}  // namespace

struct MpiBackend::Comm {
  MPI_Comm comm = MPI_COMM_WORLD;
  ~Comm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm != MPI_COMM_WORLD && !finalized) MPI_Comm_free(&comm);
  }
};

void start_mpi(int rank, int world_size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors come back as codes, then exceptions
  int mpi_rank = 0, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  if (mpi_rank != rank || mpi_size != world_size)
    throw CollectiveError(fmt::format("rank {} of {}: backend mpi, but MPI_COMM_WORLD says rank {} of {} (start the "
                                      "program with mpirun, or use backend ringgrad)", rank, world_size, mpi_rank, mpi_size));
}

MpiBackend::MpiBackend(int rank, int world_size)
    : rank_(rank), world_size_(world_size), comm_(std::make_unique<Comm>()) {
  start_mpi(rank, world_size);
}

MpiBackend::MpiBackend(std::unique_ptr<Comm> comm, int rank, int world_size)
    : rank_(rank), world_size_(world_size), comm_(std::move(comm)) {}

MpiBackend::~MpiBackend() = default;

std::unique_ptr<MpiBackend> MpiBackend::split(int color, int key) {
  int level = 0;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE)
    throw CollectiveError(fmt::format("rank {}: backend mpi: groups run from their own threads and need "
                                      "MPI_THREAD_MULTIPLE, which this MPI does not provide", rank_));
  auto comm = std::make_unique<Comm>();
  check(MPI_Comm_split(comm_->comm, color < 0 ? MPI_UNDEFINED : color, key, &comm->comm), rank_, "MPI_Comm_split");
  if (comm->comm == MPI_COMM_NULL) {
    comm->comm = MPI_COMM_WORLD;  // nothing to free
    return nullptr;
  }
  MPI_Comm_set_errhandler(comm->comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm->comm, &rank);
  MPI_Comm_size(comm->comm, &size);
  return std::unique_ptr<MpiBackend>(new MpiBackend(std::move(comm), rank, size));
}

void MpiBackend::run(CollKind kind, const CollArgs& a, int peer, uint64_t tag) {
  if (reduces(kind) && (a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16))
    throw CollectiveError(fmt::format("{} on rank {}: backend mpi cannot reduce {}: MPI has no 16-bit float type; use "
                                      "backend ringgrad", coll_name(kind), rank_, dtype_name(a.dtype)));
  const MPI_Datatype t = mpi_type(a.dtype);
  const MPI_Op op = mpi_op(a.op);
  const std::size_t es = dtype_size(a.dtype), R = static_cast<std::size_t>(rank_);
  const int n = mpi_count(a.count, rank_);
  const bool root = rank_ == a.root;
  const void* send = a.send;
  void* recv = a.recv;
  int e = MPI_SUCCESS;
  switch (kind) {
    case CollKind::kBroadcast:
      if (root && send != recv) std::memcpy(recv, send, a.count * es);
      e = MPI_Bcast(recv, n, t, a.root, comm_->comm);
      break;
    case CollKind::kReduce:
      e = MPI_Reduce(root && send == recv ? MPI_IN_PLACE : send, recv, n, t, op, a.root, comm_->comm);
      break;
    case CollKind::kAllReduce:
      e = MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, n, t, op, comm_->comm);
      break;
    case CollKind::kAllGather:
      e = MPI_Allgather(send == a.recv + R * a.count * es ? MPI_IN_PLACE : send, n, t, recv, n, t, comm_->comm);
      break;
    case CollKind::kReduceScatter: {
      // NCCL's in place (recv inside send) is not MPI's (MPI_IN_PLACE reads from recv): go
      // through a temporary block.
      std::vector<std::byte> block(a.recv >= a.send && a.recv < a.send + a.count * es * static_cast<std::size_t>(world_size_)
                                       ? a.count * es : 0);
      e = MPI_Reduce_scatter_block(send, block.empty() ? recv : block.data(), n, t, op, comm_->comm);
      if (!block.empty()) std::memcpy(recv, block.data(), block.size());
      break;
    }
    case CollKind::kGather:
      e = MPI_Gather(root && send == a.recv + R * a.count * es ? MPI_IN_PLACE : send, n, t, recv, n, t, a.root,
                     comm_->comm);
      break;
    case CollKind::kScatter:
      e = MPI_Scatter(send, n, t, root && recv == a.send + R * a.count * es ? MPI_IN_PLACE : recv, n, t, a.root,
                      comm_->comm);
      break;
    case CollKind::kAllToAll:
      e = MPI_Alltoall(send == recv ? MPI_IN_PLACE : send, n, t, recv, n, t, comm_->comm);
      break;
    case CollKind::kBarrier: e = MPI_Barrier(comm_->comm); break;
    case CollKind::kSend: e = MPI_Send(send, n, t, peer, static_cast<int>(tag % 32768), comm_->comm); break;
    case CollKind::kRecv:
      e = MPI_Recv(recv, n, t, peer, static_cast<int>(tag % 32768), comm_->comm, MPI_STATUS_IGNORE);
      break;
    case CollKind::kBatchSendRecv:  // run_batch
    case CollKind::kAllToAllV: break;   // run_all_to_all_v
  }
  check(e, rank_, coll_name(kind).data());
  const bool has_result = kind == CollKind::kAllReduce || kind == CollKind::kReduceScatter || (kind == CollKind::kReduce && root);
  if (a.op == ReduceOp::AVG && has_result) divide_for_avg(recv, a.count, a.dtype, a.op, world_size_);
}

void MpiBackend::run_all_to_all_v(const CollArgs& a, std::span<const std::size_t> send_counts,
                                  std::span<const std::size_t> recv_counts) {
  std::vector<int> sc, sd, rc, rd;
  std::size_t s_at = 0, r_at = 0;
  for (std::size_t q = 0; q < send_counts.size(); ++q) {
    sc.push_back(mpi_count(send_counts[q], rank_));
    sd.push_back(mpi_count(s_at, rank_));
    rc.push_back(mpi_count(recv_counts[q], rank_));
    rd.push_back(mpi_count(r_at, rank_));
    s_at += send_counts[q];
    r_at += recv_counts[q];
  }
  const MPI_Datatype t = mpi_type(a.dtype);
  check(MPI_Alltoallv(a.send, sc.data(), sd.data(), t, a.recv, rc.data(), rd.data(), t, comm_->comm), rank_,
        "MPI_Alltoallv");
}

void MpiBackend::run_batch(std::span<const P2POp> ops, uint64_t tag) {
  std::vector<MPI_Request> requests;
  const int mpi_tag = static_cast<int>(tag % 32768);  // MPI guarantees tags up to 32767
  for (const P2POp& op : ops)  // receives first, then sends, as irecv_isend_waitall
    if (!op.is_send)
      check(MPI_Irecv(op.buffer.data, mpi_count(op.buffer.count, rank_), mpi_type(op.buffer.dtype), op.peer, mpi_tag,
                      comm_->comm, &requests.emplace_back()), rank_, "MPI_Irecv");
  for (const P2POp& op : ops)
    if (op.is_send)
      check(MPI_Isend(op.buffer.data, mpi_count(op.buffer.count, rank_), mpi_type(op.buffer.dtype), op.peer, mpi_tag,
                      comm_->comm, &requests.emplace_back()), rank_, "MPI_Isend");
  check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), rank_, "MPI_Waitall");
}

}  // namespace ringgrad::collectives
