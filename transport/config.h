// Config: who this process is in the job (rank, world size), where the job meets (the
// rendezvous store at master_addr:master_port) and the token that lets a process in. Read from
// the environment that torchrun-style launchers, Open MPI's and MPICH's mpirun and Slurm's srun
// set.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ringgrad::transport {

struct Config {
  int rank = 0;
  int world_size = 1;
  /// Host name or address of rank 0, which serves the rendezvous store. A loopback address
  /// keeps the whole job on loopback (the store and, unless bind_addr says otherwise, every
  /// rank's listener); any other serves the store on every interface.
  std::string master_addr = "127.0.0.1";
  /// The store's port; 0 in a job of several ranks: not known yet (under mpirun, backend mpi
  /// finds it through MPI, collectives/backends/mpi_backend.h).
  uint16_t master_port = 0;
  /// Local interface address to listen on for peers. "" = the address this host uses to reach
  /// master_addr (so a multi-homed host picks the interface on the job's network).
  std::string bind_addr;
  /// Connections (store and peers) from a process with a different job id are refused.
  std::string job_id;
  /// The job's secret (job_token.h): connections (store and peers) that do not carry it are
  /// refused. May be empty only in a job that stays on loopback (loopback_only()): a job that
  /// listens on a network refuses to start without one.
  std::string job_token;
  /// An operation that makes no progress for this long fails with TransportError.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  /// How long a small blocking receive (kPolledReceiveBytes at most) reads the socket without
  /// waiting before it sleeps in the kernel; 0 sleeps at once. The timeout counts from the end
  /// of the poll. from_env() reads RINGGRAD_TCP_POLL_US (microseconds, 0 to 1000000), else
  /// takes receive_poll_default(); a Config built by hand keeps 0.
  std::chrono::microseconds receive_poll{0};

  /// Reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, RINGGRAD_BIND_ADDR, RINGGRAD_JOB_ID,
  /// RINGGRAD_JOB_TOKEN, RINGGRAD_TIMEOUT (seconds) and RINGGRAD_TCP_POLL_US; LOCAL_WORLD_SIZE
  /// (else Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, else the world size) counts the ranks on this
  /// host for receive_poll_default(). Without RANK/WORLD_SIZE it falls back to Open MPI's
  /// OMPI_COMM_WORLD_RANK/_SIZE, then MPICH's PMI_RANK/PMI_SIZE, then Slurm's
  /// SLURM_PROCID/SLURM_NTASKS. MASTER_ADDR and MASTER_PORT come with RANK (a torchrun-style
  /// launcher sets all four); under mpirun or srun both may be absent (master_port stays 0).
  /// Throws TransportError naming the variable when one is missing or not a valid number.
  static Config from_env();

  /// Whether the job stays on this host: master_addr is a loopback address, and so is
  /// bind_addr where it is set.
  bool loopback_only() const;

  /// Whether a launcher started this process: the environment names its rank (RANK, else
  /// OMPI_COMM_WORLD_RANK, else SLURM_PROCID). Without one a program runs alone, a world of 1.
  static bool launched();
};

/// Receives of at most this many payload bytes poll (Config::receive_poll). Collectives send
/// messages this small from the caller's thread (collectives/links/host_link.cc uses the same
/// limit), so the poll rarely holds a CPU that a progress thread needs to move a large one.
inline constexpr std::uint64_t kPolledReceiveBytes = 16 << 10;

/// The polling rule: 50 us when this process may run on at least as many CPUs as there are
/// ranks on its host, so that the poll takes a CPU no rank is waiting for; 0 otherwise. What the
/// poll buys: transport/small_receive_poll.h.
std::chrono::microseconds receive_poll_default(int local_ranks, int cpus);

}  // namespace ringgrad::transport
