// A stranger on the same host as a running job, for the launcher test: which addresses the
// job's processes listen on (read from /proc, as `ss -ltnp` would), and knocks on the job's
// store and on rank 0's listener with a wrong token, no token, garbage and silence.
#pragma once

#include <string>
#include <vector>

#include "transport/config.h"
#include "transport/net.h"
#include "transport/store.h"

namespace ringgrad::test {

/// A listening TCP socket: "address:port" and whether the address is a loopback one.
struct Listener {
  std::string address;
  bool loopback = false;
};

/// The listening TCP sockets (IPv4 and IPv6) of the processes `pids`: the socket inodes of
/// /proc/<pid>/fd matched with the LISTEN rows of /proc/net/tcp and /proc/net/tcp6.
std::vector<Listener> listeners_of(const std::vector<int>& pids);

/// This process and the others with its parent: its sibling ranks under ringgrad-run.
std::vector<int> siblings();

/// Knocks on the store at config.master_addr:master_port and on rank 0's listener (its address
/// read from `store`) as strangers would: wrong token, no token, garbage (each answered or
/// closed, and logged by rank 0), and one silent connection to each, left open in `silent`.
/// Returns the address each logged knock came from. Throws std::runtime_error when a knock is
/// not closed.
std::vector<std::string> knock_on_the_job(const transport::Config& config, transport::Store& store,
                                          std::vector<transport::net::Fd>& silent);

}  // namespace ringgrad::test
