// StoreServer: the rendezvous key-value store that rank 0 serves (see store_protocol.h), on its
// own thread with its own Asio io_context. Blocking gets and waits are parked server-side until
// their key is set or their timeout passes, so a client never polls.
#pragma once

#include <cstdint>
#include <memory>

#include "transport/config.h"

namespace ringgrad::transport {

namespace detail {
class StoreService;
}  // namespace detail

class StoreServer {
 public:
  /// Listens at config.master_port (0 = an ephemeral one): on master_addr's loopback address
  /// when it is one, else on every interface; serves clients of
  /// config.job_id that carry config.job_token until destroyed. A client without the token, of
  /// another job, silent for config.timeout before its hello, or sending a malformed request is
  /// dropped, with a line on stderr naming its address; the others are served on. Throws
  /// TransportError if the port cannot be bound.
  explicit StoreServer(const Config& config);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  /// The port it listens on (the ephemeral one when constructed with 0).
  uint16_t port() const;

 private:
  std::unique_ptr<detail::StoreService> impl_;
};

}  // namespace ringgrad::transport
