// Joining a job through MPI: under mpirun, backend mpi needs no MASTER_ADDR or MASTER_PORT.
// MPI already knows every rank, so rank 0 serves the rendezvous store on a port the kernel
// picks and tells the others where with one MPI_Bcast: on loopback when every rank runs on
// rank 0's host (their MPI_Get_processor_name agree), else at rank 0's host name; with a fresh
// job token (transport/job_token.h). Then the job joins as any other (transport::Transport).
#pragma once

#include <memory>

#include "transport/config.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

/// Starts MPI (start_mpi), finds rank 0's store as above and joins the job: config with
/// master_addr, master_port and job_token set by rank 0 (a job_token the environment gave
/// rank 0 is kept). Collective over MPI_COMM_WORLD: every rank calls it, or none. Throws
/// CollectiveError when MPI's rank or size is not config's, transport::TransportError when
/// rank 0 cannot serve the store (on every rank: the others hear why) or the job cannot join.
std::unique_ptr<transport::Transport> join_through_mpi(const transport::Config& config);

}  // namespace ringgrad::collectives
