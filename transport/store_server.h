// StoreServer: the rendezvous key-value store that rank 0 serves (see store_protocol.h), on its
// own thread with its own Asio io_context. Blocking gets and waits are parked server-side until
// their key is set or their timeout passes, so a client never polls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ringgrad::transport {

namespace detail {
class StoreService;
}  // namespace detail

class StoreServer {
 public:
  /// Listens on every interface at port (0 = an ephemeral one) and serves clients of job_id
  /// until destroyed; connections from other jobs and malformed requests are refused and logged
  /// to stderr. Throws TransportError if the port cannot be bound.
  StoreServer(uint16_t port, std::string job_id);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  /// The port it listens on (the ephemeral one when constructed with 0).
  uint16_t port() const;

 private:
  std::unique_ptr<detail::StoreService> impl_;
};

}  // namespace ringgrad::transport
