// CommStats: what a communicator was asked to move, per kind of call.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "collectives/algo.h"

namespace ringgrad::collectives {

/// What a communicator was asked to move, per kind of call, since it was made (or reset):
/// the calls, and their bytes as nccl-tests sizes them (the whole buffer; for all-gather,
/// reduce-scatter, gather and scatter all p blocks), for send, recv and batches the bytes this
/// rank sends and receives. What travels on the wire follows from the algorithm (an all-reduce
/// by ring sends 2(p-1)/p of its size from each rank: docs/collectives.md's busbw factors).
struct CommStats {
  struct Entry {
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
  };
  std::map<CollKind, Entry> by_kind;
  /// Bytes over all kinds.
  std::uint64_t total_bytes() const;
  /// "all_reduce 18 calls 7.08 MB, batch_send_recv 4 calls 0.79 MB" (MB = 1e6 bytes).
  std::string describe() const;
};

}  // namespace ringgrad::collectives
