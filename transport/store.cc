// Store client: one TCP connection to the StoreServer, one request at a time under a mutex.
// Gets and waits are answered by the server when the key is set or the timeout passes; the
// client's own deadline is that timeout plus a grace period, for a server that went silent.

#include "transport/store.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "transport/error.h"
#include "transport/net.h"
#include "transport/store_protocol.h"

namespace ringgrad::transport {

namespace proto = store_protocol;
using namespace std::chrono_literals;

class StoreConnection {
 public:
  StoreConnection(std::string where, net::Fd fd) : where_(std::move(where)), fd_(std::move(fd)) {}

  struct Answer {
    proto::Status status{};
    std::string value;
  };

  // The server answers a get/wait at the latest when its timeout passes; the client gives it
  // `slack` more before it calls the server silent.
  Answer request(proto::Op op, std::string_view key, std::string_view value, std::chrono::milliseconds timeout,
                 std::chrono::milliseconds slack = 10s) {
    const auto timeout_ms = static_cast<uint32_t>(std::clamp<int64_t>(timeout.count(), 0, UINT32_MAX));
    std::vector<std::byte> message = proto::encode_request(op, key, value, timeout_ms);
    std::lock_guard lock(mutex_);
    const auto deadline = net::Clock::now() + timeout + slack;
    const std::string what = op == proto::Op::hello ? fmt::format("{}: hello (job id '{}')", where_, key)
                                                    : fmt::format("{}: request for key '{}'", where_, key);
    net::write_all(fd_.get(), message, deadline, what);
    std::array<std::byte, proto::kResponseFixedBytes> header_bytes;
    net::read_exact(fd_.get(), header_bytes, deadline, what);
    proto::ResponseHeader header = proto::decode_response_header(header_bytes);
    std::string answer(header.value_bytes, '\0');
    net::read_exact(fd_.get(), std::as_writable_bytes(std::span(answer)), deadline, what);
    return {header.status, std::move(answer)};
  }

  const std::string& where() const { return where_; }

 private:
  std::string where_;  // "rank 3: store at host:port", the start of every error message
  net::Fd fd_;
  std::mutex mutex_;
};

Store::Store(const std::string& host, uint16_t port, const std::string& job_id, const std::string& job_token, int rank,
             std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  const std::string where = fmt::format("rank {}: store at {}:{}", rank, host, port);
  const auto deadline = net::Clock::now() + timeout;
  try {
    net::require_known_host(host, where);
  } catch (const TransportError& e) {
    throw TransportError(fmt::format("{} (MASTER_ADDR must name rank 0's host)", e.what()));
  }
  // Rank 0 may still be starting the server: retry refused connections until the deadline.
  for (;;) {
    try {
      conn_ = std::make_unique<StoreConnection>(where, net::connect(host, port, deadline, where));
      break;
    } catch (const TransportError& e) {
      if (net::Clock::now() + 100ms >= deadline)
        throw TransportError(fmt::format("{} (gave up after {} s; is rank 0 running, and MASTER_ADDR/MASTER_PORT right?)",
                                         e.what(), std::chrono::duration<double>(timeout).count()));
      std::this_thread::sleep_for(100ms);
    }
  }
  // A store answers the hello at once: no answer within what is left of the timeout (at least a
  // second) means something else listens on that port.
  const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - net::Clock::now()),
                             std::chrono::milliseconds(1s));
  StoreConnection::Answer answer;
  try {
    answer = conn_->request(proto::Op::hello, job_id, proto::encode_hello_value({static_cast<uint32_t>(rank), job_token}),
                            left, 0ms);
  } catch (const TransportError& e) {
    throw TransportError(fmt::format("{} (is the process listening on MASTER_PORT {} the store of rank 0 of this job?)",
                                     e.what(), port));
  }
  if (answer.status != proto::Status::ok)
    throw TransportError(fmt::format("{}: refused: {}", where, answer.value));
}

Store::~Store() = default;

void Store::set(std::string_view key, std::string_view value) {
  auto answer = conn_->request(proto::Op::set, key, value, timeout_);
  if (answer.status != proto::Status::ok)
    throw TransportError(fmt::format("{}: set '{}' failed: {}", conn_->where(), key, answer.value));
}

std::string Store::get(std::string_view key) { return get(key, timeout_); }

std::string Store::get(std::string_view key, std::chrono::milliseconds timeout) {
  auto answer = conn_->request(proto::Op::get, key, "", timeout);
  if (answer.status == proto::Status::timeout)
    throw TransportError(fmt::format("{}: get '{}' timed out after {} s: no rank set it", conn_->where(), key,
                                     std::chrono::duration<double>(timeout).count()));
  if (answer.status != proto::Status::ok)
    throw TransportError(fmt::format("{}: get '{}' failed: {}", conn_->where(), key, answer.value));
  return std::move(answer.value);
}

int64_t Store::add(std::string_view key, int64_t delta) {
  auto answer = conn_->request(proto::Op::add, key, proto::encode_i64(delta), timeout_);
  if (answer.status != proto::Status::ok)
    throw TransportError(fmt::format("{}: add to '{}' failed: {}", conn_->where(), key, answer.value));
  return proto::decode_i64(answer.value);
}

void Store::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void Store::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = net::Clock::now() + timeout;
  for (const std::string& key : keys) {
    auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - net::Clock::now()), 0ms);
    auto answer = conn_->request(proto::Op::wait, key, "", left);
    if (answer.status == proto::Status::timeout)
      throw TransportError(fmt::format("{}: wait timed out after {} s: key '{}' was never set", conn_->where(),
                                       std::chrono::duration<double>(timeout).count(), key));
    if (answer.status != proto::Status::ok)
      throw TransportError(fmt::format("{}: wait for '{}' failed: {}", conn_->where(), key, answer.value));
  }
}

}  // namespace ringgrad::transport
