// CollectiveError: the error for a call that is wrong rather than a network that failed.
#pragma once

#include <stdexcept>

namespace ringgrad::collectives {

/// Invalid arguments (on any rank) or ranks that disagree on a collective's kind, count,
/// dtype, op, root or algorithm. Thrown on every rank, naming the ranks and the values; no
/// data has moved, so the communicator stays usable. Transport failures (dead peer, timeout)
/// throw transport::TransportError instead and leave the communicator broken.
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ringgrad::collectives
