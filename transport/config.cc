// Config::from_env: rank and world size from the torchrun-style variables, else from Open MPI's,
// MPICH's or Slurm's, the rendezvous address from MASTER_ADDR/MASTER_PORT, the job's id and
// token, and how small receives wait.

#include "transport/config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "transport/cpus.h"
#include "transport/error.h"
#include "transport/net.h"

namespace ringgrad::transport {
namespace {

std::optional<std::string_view> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string_view(value);
}

int64_t parse_int(const char* name, std::string_view text, int64_t lo, int64_t hi) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi)
    throw TransportError(fmt::format("ringgrad: environment variable {}='{}' is not an integer in [{}, {}]",
                                     name, text, lo, hi));
  return value;
}

// The first of the (rank, size) variable pairs that is set, or an error listing all of them.
// MPICH's come before Slurm's: mpiexec inside a Slurm allocation passes on the allocation's
// SLURM_PROCID (0 for every rank) and SLURM_NTASKS.
struct Source {
  const char* rank;
  const char* size;
};
constexpr Source kSources[] = {
    {"RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI_RANK", "PMI_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS"},
};

}  // namespace

bool Config::launched() {
  return std::any_of(std::begin(kSources), std::end(kSources), [](const Source& s) { return env(s.rank).has_value(); });
}

Config Config::from_env() {
  Config config;
  const Source* found = nullptr;
  for (const Source& source : kSources) {
    if (env(source.rank) || env(source.size)) {
      found = &source;
      break;
    }
  }
  if (found == nullptr)
    throw TransportError(
        "ringgrad: no rank in the environment: set RANK and WORLD_SIZE (ringgrad-run does), or run "
        "under mpirun (OMPI_COMM_WORLD_RANK/_SIZE) or srun (SLURM_PROCID/SLURM_NTASKS)");
  if (!env(found->rank) || !env(found->size))
    throw TransportError(fmt::format("ringgrad: {} and {} must be set together", found->rank, found->size));
  config.world_size = static_cast<int>(parse_int(found->size, *env(found->size), 1, 1 << 20));
  config.rank = static_cast<int>(parse_int(found->rank, *env(found->rank), 0, config.world_size - 1));

  // A torchrun-style launcher sets the rendezvous with the rank; under mpirun or srun the user
  // sets both variables or neither (then backend mpi finds rank 0 through MPI).
  const auto addr = env("MASTER_ADDR");
  const auto port = env("MASTER_PORT");
  const bool required = found == &kSources[0] || addr || port;
  if (addr) config.master_addr = std::string(*addr);
  else if (config.world_size > 1 && required)
    throw TransportError("ringgrad: MASTER_ADDR is not set: it names the host of rank 0, which serves the rendezvous store");
  if (port) config.master_port = static_cast<uint16_t>(parse_int("MASTER_PORT", *port, 1, 65535));
  else if (config.world_size > 1 && required)
    throw TransportError("ringgrad: MASTER_PORT is not set: it is the TCP port of the rendezvous store on MASTER_ADDR");
  if (auto bind = env("RINGGRAD_BIND_ADDR")) config.bind_addr = std::string(*bind);
  if (auto token = env("RINGGRAD_JOB_TOKEN")) config.job_token = std::string(*token);
  if (auto job = env("RINGGRAD_JOB_ID")) config.job_id = std::string(*job);
  else if (auto slurm_job = env("SLURM_JOB_ID"))  // the tasks of one srun share job and step ids
    config.job_id = fmt::format("slurm-{}.{}", *slurm_job, env("SLURM_STEP_ID").value_or("0"));
  if (auto timeout = env("RINGGRAD_TIMEOUT"))
    config.timeout = std::chrono::seconds(parse_int("RINGGRAD_TIMEOUT", *timeout, 1, 7 * 24 * 3600));
  if (auto poll = env("RINGGRAD_TCP_POLL_US")) {
    config.receive_poll = std::chrono::microseconds(parse_int("RINGGRAD_TCP_POLL_US", *poll, 0, 1000000));
  } else {
    int local_ranks = config.world_size;
    for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
      if (auto local = env(name)) {
        // A hint only: one inherited from an enclosing job may exceed this job's world.
        local_ranks = std::min(config.world_size, static_cast<int>(parse_int(name, *local, 1, 1 << 20)));
        break;
      }
    }
    config.receive_poll = receive_poll_default(local_ranks, static_cast<int>(allowed_cpus().size()));
  }
  return config;
}

bool Config::loopback_only() const {
  return net::is_loopback(master_addr) && (bind_addr.empty() || net::is_loopback(bind_addr));
}

std::chrono::microseconds receive_poll_default(int local_ranks, int cpus) {
  return cpus >= local_ranks ? std::chrono::microseconds(50) : std::chrono::microseconds(0);
}

}  // namespace ringgrad::transport
