// Topology: where the simulated ranks sit and what joins them. H hosts of L ranks each. Inside a
// host every rank has a port into the host's fabric (shared memory, an NVLink switch); between
// hosts, NICs (one per rank, "rails", or one per host shared by its ranks) behind a switch, and
// optionally each host's uplink to it (a tapered fat tree). A hop is one direction of one link
// (beta seconds per byte, one message at a time: network.h); a path is its hops and one alpha,
// its latency:
//
//   same host:        out port of s  ->  in port of d
//   different hosts:  NIC of s (send) [-> uplink of s's host -> downlink of d's host] -> NIC of d (receive)
//
// An idle path costs alpha + bytes * (largest beta on it): cut-through, as networks forward.
// A link that is not duplex (a JSON file's "duplex": false) has one port a rank, carrying what
// it sends and what it receives one after the other. Each rank also reduces (gamma seconds per
// byte) and copies (seconds per byte) in its own memory.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "collectives/cost_model.h"
#include "collectives/host_layout.h"

namespace ringgrad::collectives::sim {

/// One kind of link: latency and time per byte, each direction.
struct LinkFigures {
  std::string name;
  double alpha = 0;    // seconds
  double beta = 0;     // seconds per byte
  bool duplex = true;  // false: sending and receiving share the rank's port
};

/// Figures by name (docs/sim.md gives each one's source): "shm", "tcp" (loopback), "tcp1g" (the
/// emulated cluster's shaped links), "nvlink4", "nvlink5", "ib400", "ib800". Throws
/// std::invalid_argument listing them for another name.
LinkFigures link_figures(std::string_view name);

/// The hops of one message, in order, and its latency.
struct Path {
  std::array<int, 4> hops{};
  int size = 0;
  double alpha = 0;
};

struct Topology {
  int hosts = 1;
  int ranks_per_host = 2;
  LinkFigures intra, inter;
  bool nic_per_rank = true;    // false: one NIC per host, shared by its ranks
  double uplink_beta = 0;      // seconds per byte of each host's uplink and downlink; 0: none
  double gamma = 0;            // seconds per byte reduced
  double copy_beta = 0;        // seconds per byte copied
  bool device_memory = false;  // the ranks are GPUs (reducing in their memory, beside NVLink)
  /// Simulated ranks per device: a GPU's compute and its communication stream (gpt_step.h).
  /// Rank s x devices() + d is stream s of device d; the streams of a device share its links and
  /// reach one another at once.
  int streams = 1;

  /// GPUs (or CPU ranks) in all; ranks in all (devices x streams); the host of `rank`
  /// (ranks are numbered device-major within a stream, rank % devices() the device).
  int devices() const { return hosts * ranks_per_host; }
  int world_size() const { return devices() * streams; }
  int host_of(int rank) const { return rank % devices() / ranks_per_host; }
  /// Which host each rank is on, as ringgrad's hierarchical algorithms read it (host_layout.h).
  HostLayout layout() const;

  /// Hops are numbered 0 .. hop_count()-1; hop_beta(h): seconds per byte of hop h.
  int hop_count() const;
  double hop_beta(int hop) const;
  /// The hops a message from rank src to rank dst crosses, in order (the sender's port, then the
  /// receiver's; through the hosts' uplinks where there are some), and the latency of the link
  /// it takes (intra or inter, seconds); none between two streams of one device.
  Path path(int src, int dst) const;

  /// The piece size ringgrad's links cut transfers into for these ranks (comm_options.h): 4 MiB
  /// on GPUs (device_chunk_bytes), 128 KiB in host memory (chunk_bytes).
  std::size_t chunk_bytes() const;
  /// The closed-form model of the same network: alpha and beta between hosts (inside one when
  /// hosts == 1), alpha_local and beta_local inside one, gamma, and `chunk_bytes`.
  CostModel cost_model(std::size_t chunk_bytes) const;
  /// "4 hosts x 8 ranks; inside a host nvlink5 (3.4 us, 900 GB/s); between hosts ib800 (...), a NIC per rank"
  std::string describe() const;

  /// A preset, "hosts=4x8,intra=nvlink5,inter=ib800[,nic=rank|host][,uplink=GBPS]", or the path
  /// of a JSON file (ending in .json): {"hosts": 4, "ranks_per_host": 8, "intra": "nvlink5" or
  /// {"alpha_us": 3.4, "GBps": 900, "duplex": true}, "inter": ..., "nic": "rank", "uplink_GBps": 400,
  /// "reduce_GBps": ..., "copy_GBps": ...}. Reduction and copy speeds default to the host's kind:
  /// GPU memory beside NVLink, this CPU beside shm and tcp. Throws std::invalid_argument naming
  /// the key and what it accepts.
  static Topology parse(std::string_view spec);
  /// p ranks, every pair joined alike (each rank its own host and NIC): the closed form's network.
  static Topology uniform(int p, double alpha, double beta, double gamma = 0, double copy_beta = 0);
};

}  // namespace ringgrad::collectives::sim
