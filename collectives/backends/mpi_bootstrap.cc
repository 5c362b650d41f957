// join_through_mpi: which host rank 0 is on, its store, then three broadcasts of where to meet.

#include "collectives/backends/mpi_bootstrap.h"

#include <mpi.h>

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "collectives/backends/mpi_backend.h"
#include "transport/error.h"
#include "transport/job_token.h"
#include "transport/net.h"
#include "transport/store_server.h"

namespace ringgrad::collectives {
namespace {

using transport::TransportError;

void check(int result, int rank, const char* what) {
  if (result != MPI_SUCCESS) throw TransportError(fmt::format("rank {}: backend mpi: {} failed while joining the job", rank, what));
}

// Rank 0's text on every rank: its length, then its bytes.
std::string broadcast(std::string text, int rank) {
  uint64_t bytes = text.size();
  check(MPI_Bcast(&bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), rank, "MPI_Bcast");
  text.resize(bytes);
  check(MPI_Bcast(text.data(), static_cast<int>(bytes), MPI_CHAR, 0, MPI_COMM_WORLD), rank, "MPI_Bcast");
  return text;
}

// Where the others reach rank 0's store: loopback when they all run on its host, else its host
// name, which must name an address the other hosts reach.
std::string rank0_address(bool one_host, const std::string& host) {
  if (one_host) return "127.0.0.1";
  if (transport::net::is_loopback(host))  // as Debian's /etc/hosts maps the host's own name
    throw TransportError(fmt::format("its host name '{}' names a loopback address here, which the ranks on other "
                                     "hosts cannot reach: give MASTER_ADDR (rank 0's address on the job's network) "
                                     "and MASTER_PORT to every rank (mpirun -x)", host));
  return host;
}

}  // namespace

std::unique_ptr<transport::Transport> join_through_mpi(const transport::Config& given) {
  transport::Config config = given;
  const int rank = config.rank;
  start_mpi(rank, config.world_size);
  // One host or several: every rank compares its processor name (its host name, in Open MPI and
  // MPICH) with rank 0's.
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  check(MPI_Get_processor_name(name, &length), rank, "MPI_Get_processor_name");
  const std::string host(name, static_cast<std::size_t>(length));
  int elsewhere = broadcast(host, rank) == host ? 0 : 1;
  check(MPI_Allreduce(MPI_IN_PLACE, &elsewhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), rank, "MPI_Allreduce");

  // Rank 0 serves the store; what went wrong there is broadcast first, so that no rank waits
  // for a store that is not coming.
  std::unique_ptr<transport::StoreServer> server;
  std::string failure;
  if (rank == 0) {
    try {
      config.master_addr = rank0_address(elsewhere == 0, host);
      config.master_port = 0;  // the kernel picks a free one
      if (config.job_token.empty()) config.job_token = transport::new_job_token();
      server = std::make_unique<transport::StoreServer>(config);
      config.master_port = server->port();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  failure = broadcast(failure, rank);
  if (!failure.empty())
    throw TransportError(fmt::format("rank {}: backend mpi: rank 0 cannot serve the rendezvous store: {}", rank, failure));
  config.master_addr = broadcast(config.master_addr, rank);
  config.master_port = static_cast<uint16_t>(std::stoi(broadcast(std::to_string(config.master_port), rank)));
  config.job_token = broadcast(config.job_token, rank);  // MPI's own channel: the launcher's, not the job's network
  return std::make_unique<transport::Transport>(config, std::move(server));
}

}  // namespace ringgrad::collectives
