// HostLayout: which ranks share a host. Every rank publishes the address it listens on in the
// rendezvous store (transport/rendezvous.h); ranks that listen on one IP address are taken to
// be on one host (on one machine that is 127.0.0.1 for all; in network namespaces, or on a
// cluster, one address per host). Hierarchical collectives go inside hosts, then across.
#pragma once

#include <vector>

#include "transport/store.h"

namespace ringgrad::collectives {

struct HostLayout {
  std::vector<int> host_of;  // rank -> host index; hosts are numbered in order of their lowest rank

  int world_size() const { return static_cast<int>(host_of.size()); }
  int hosts() const;
  /// Every host holds the same number of ranks (what the hierarchical all-reduce needs).
  bool uniform() const;
  /// The ranks on `rank`'s host, ascending.
  std::vector<int> local_ranks(int rank) const;
  /// One rank per host, each at `rank`'s position among its host's ranks, in host order
  /// (NCCL's "rail": the ranks that talk across hosts together). Needs uniform().
  std::vector<int> cross_ranks(int rank) const;

  /// The layout of the ranks `ranks` (a group, in group-rank order), hosts renumbered.
  HostLayout subset(const std::vector<int>& ranks) const;

  /// The layout of a job of `world_size` ranks from their published addresses. Throws
  /// transport::TransportError when an address is missing past the store's timeout.
  static HostLayout from_store(transport::Store& store, int world_size);
};

}  // namespace ringgrad::collectives
