// mpi_backend.h and mpi_bootstrap.h for a build without MPI (no libopenmpi-dev found):
// check_backend refuses RINGGRAD_BACKEND=mpi first, naming the package, so none of these runs;
// each throws the same reason if one ever did.
#include "collectives/backends/mpi_backend.h"
#include "collectives/backends/mpi_bootstrap.h"

#include <fmt/format.h>

#include "collectives/collective_error.h"

namespace ringgrad::collectives {
namespace {

[[noreturn]] void no_mpi(int rank) {
  throw CollectiveError(fmt::format("rank {}: backend mpi but ringgrad was built without MPI (install "
                                    "libopenmpi-dev and rebuild)", rank));
}

}  // namespace

void start_mpi(int rank, int) { no_mpi(rank); }
std::unique_ptr<transport::Transport> join_through_mpi(const transport::Config& config) { no_mpi(config.rank); }

struct MpiBackend::Comm {};
MpiBackend::MpiBackend(int rank, int world_size) : rank_(rank), world_size_(world_size) { no_mpi(rank); }
MpiBackend::~MpiBackend() = default;
std::unique_ptr<MpiBackend> MpiBackend::split(int, int) { no_mpi(rank_); }
void MpiBackend::run(CollKind, const CollArgs&, int, uint64_t) { no_mpi(rank_); }
void MpiBackend::run_batch(std::span<const P2POp>, uint64_t) { no_mpi(rank_); }
void MpiBackend::run_all_to_all_v(const CollArgs&, std::span<const std::size_t>, std::span<const std::size_t>) {
  no_mpi(rank_);
}

}  // namespace ringgrad::collectives
