// mpi_backend.h for a build without MPI (no libopenmpi-dev found): the Communicator never makes
// an MpiBackend there (check_backend refuses RINGGRAD_BACKEND=mpi, naming the package), but its
// destructor still destroys the empty pointer, which needs these two definitions.
#include "collectives/backends/mpi_backend.h"

namespace ringgrad::collectives {

struct MpiBackend::Comm {};
MpiBackend::~MpiBackend() = default;

}  // namespace ringgrad::collectives
