// Config: who this process is in the job (rank, world size) and where the job meets (the
// rendezvous store at master_addr:master_port). Read from the environment that torchrun-style
// launchers, Open MPI's mpirun and Slurm's srun set.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ringgrad::transport {

struct Config {
  int rank = 0;
  int world_size = 1;
  /// Host name or address of rank 0, which serves the rendezvous store.
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 0;
  /// Local interface address to listen on for peers. "" = the address this host uses to reach
  /// master_addr (so a multi-homed host picks the interface on the job's network).
  std::string bind_addr;
  /// Connections (store and peers) from a process with a different job id are refused.
  std::string job_id;
  /// An operation that makes no progress for this long fails with TransportError.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};

  /// Reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, RINGGRAD_BIND_ADDR, RINGGRAD_JOB_ID and
  /// RINGGRAD_TIMEOUT (seconds). Without RANK/WORLD_SIZE it falls back to Open MPI's
  /// OMPI_COMM_WORLD_RANK/_SIZE, then Slurm's SLURM_PROCID/SLURM_NTASKS.
  /// Throws TransportError naming the variable when one is missing or not a valid number.
  static Config from_env();
};

}  // namespace ringgrad::transport
