// World: p simulated ranks in one process: a topology, the event loop that runs each rank's code
// in a fiber, the network between them, and one SimLink per rank (sim_link.h), the Link the
// algorithm files run on unchanged. Two modes:
//   payload     buffers are real and messages carry their bytes: results can be checked;
//   sizes only  no byte is stored, copied or reduced, only timed; buffers point into address
//               space mapped without access (unbacked()), so a copy that slipped through would
//               fault. For thousands of ranks and gigabytes.
//
//   World world(Topology::parse("hosts=4x8,intra=nvlink5,inter=ib800"), {.payload = false});
//   double seconds = world.run([&](SimLink& link) { ring_all_reduce(link, args); });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/sim/engine.h"
#include "collectives/sim/network.h"
#include "collectives/sim/topology.h"

namespace ringgrad::collectives::sim {

class SimLink;

/// One operation of one rank, from its start to its end in virtual time (the trace's spans).
struct SimSpan {
  int rank;
  const char* name;  // "send_recv", "send_recv_reduce", "wait", "copy", "reduce", or a compute's name
  double t0, t1;     // seconds
  int peer;          // the rank received from (else sent to); -1: none
  std::size_t bytes;
};

struct WorldOptions {
  bool payload = true;
  std::size_t chunk_bytes = 128 << 10;  // Link::chunk_bytes (CommOptions' default)
  /// Chunks a rank may send a peer ahead of the peer's receives (network.h): NCCL's 8 slots per
  /// peer; 0: none.
  std::size_t window_chunks = 8;
  FiberSwitch fibers = default_fiber_switch();
  /// Called with every operation of every rank, when set (chrome_trace.h records them).
  std::function<void(const SimSpan&)> observer;
};

class World {
 public:
  explicit World(Topology topology, WorldOptions options = {});
  ~World();

  const Topology& topology() const { return topology_; }
  const WorldOptions& options() const { return options_; }
  int size() const { return topology_.world_size(); }

  /// Runs body(link) on every rank from virtual time 0 on an idle network, each rank with its
  /// SimLink, until all return. Returns when the last rank finished (seconds); finish(r) gives
  /// each. Throws what a rank threw, or std::runtime_error on a deadlock (engine.h).
  double run(const std::function<void(SimLink&)>& body);
  double finish(int rank) const { return finish_[static_cast<std::size_t>(rank)]; }

  /// Sizes only: `bytes` of address space that may not be read or written (the same range for
  /// every caller that fits in it).
  std::byte* unbacked(std::size_t bytes);

  Engine& engine() { return engine_; }
  Network& network() { return network_; }

 private:
  struct Reservation;
  Topology topology_;
  WorldOptions options_;
  Engine engine_;
  Network network_;
  std::vector<std::unique_ptr<SimLink>> links_;
  std::vector<double> finish_;
  std::vector<std::unique_ptr<Reservation>> reserved_;
};

}  // namespace ringgrad::collectives::sim
