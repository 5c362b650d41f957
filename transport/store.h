// Store: a client of the rendezvous key-value store that rank 0 serves, in the spirit of
// PyTorch's TCPStore. Ranks publish their listening addresses here and wait for each other's.
// Blocking calls, one request at a time on one TCP connection; safe to call from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ringgrad::transport {

class StoreConnection;

class Store {
 public:
  /// Connects to the store at host:port, retrying while it starts, for at most `timeout`, and
  /// says hello with the job's id and token. `timeout` is also the default for get and wait.
  /// `rank` only names this client in errors and in the server's log. Throws TransportError
  /// when it cannot connect or the server refuses the token or the job id.
  Store(const std::string& host, uint16_t port, const std::string& job_id, const std::string& job_token, int rank,
        std::chrono::milliseconds timeout);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Sets key to value (any bytes, at most 64 MiB; keys at most 4 KiB), waking its waiters.
  void set(std::string_view key, std::string_view value);
  /// Returns the value of key, waiting until it is set. Throws TransportError on timeout.
  std::string get(std::string_view key);
  std::string get(std::string_view key, std::chrono::milliseconds timeout);
  /// Adds delta to the integer stored at key (absent = 0) and returns the new value, atomically.
  int64_t add(std::string_view key, int64_t delta);
  /// Waits until every key is set. Throws TransportError naming the missing key on timeout.
  void wait(const std::vector<std::string>& keys);
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::unique_ptr<StoreConnection> conn_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ringgrad::transport
