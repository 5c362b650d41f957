// TransportError: the one exception type of ringgrad's transport layer. Its message names the
// local rank, the peer, the operation and how far it got, so a person can act on it.
#pragma once

#include <stdexcept>

namespace ringgrad::transport {

/// Thrown when a transport, store or rendezvous operation cannot complete: a peer closed its
/// connection or died, a peer stayed silent past the timeout, a message of the wrong length or
/// tag arrived, or a configuration value is missing or invalid.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ringgrad::transport
