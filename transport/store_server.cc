// StoreServer: an Asio accept loop and one session per client connection; each session reads a
// request (header, then key and value once their lengths are checked), answers it, and reads
// the next. The first must be a hello with the job's token and id, within the timeout. A
// get/wait on a missing key parks the session until a set or its timer fires.

#include "transport/store_server.h"

#include <array>
#include <thread>
#include <unordered_map>
#include <vector>

#include <asio.hpp>
#include <fmt/format.h>

#include "transport/error.h"
#include "transport/job_token.h"
#include "transport/net.h"
#include "transport/store_protocol.h"

namespace ringgrad::transport {
namespace detail {

namespace proto = store_protocol;
using asio::ip::tcp;

class Session;

class StoreService {
 public:
  explicit StoreService(const Config& config);
  ~StoreService();
  uint16_t port() const { return port_; }

  const std::string& job_id() const { return job_id_; }
  const std::string& job_token() const { return job_token_; }
  std::chrono::milliseconds hello_timeout() const { return hello_timeout_; }
  std::unordered_map<std::string, std::string>& data() { return data_; }
  // Sessions parked on a key; woken by set/add of that key.
  void park(const std::string& key, const std::shared_ptr<Session>& session) { waiters_[key].push_back(session); }
  void wake(const std::string& key);

 private:
  void accept();

  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  uint16_t port_ = 0;
  std::string job_id_, job_token_;
  std::chrono::milliseconds hello_timeout_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::vector<std::weak_ptr<Session>>> waiters_;
  std::thread thread_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, StoreService& server)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), server_(server) {
    asio::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    peer_ = ec ? "?" : fmt::format("{}:{}", remote.address().to_string(), remote.port());
    socket_.set_option(tcp::no_delay(true), ec);
  }

  // Serves the connection: its hello first, within the server's hello timeout.
  void start() {
    timer_.expires_after(server_.hello_timeout());
    timer_.async_wait([self = shared_from_this()](asio::error_code ec) {
      if (!ec && !self->greeted_)
        self->drop(fmt::format("no hello within {} s", std::chrono::duration<double>(self->server_.hello_timeout()).count()));
    });
    read_header();
  }

  void read_header() {
    asio::async_read(socket_, asio::buffer(header_bytes_), [self = shared_from_this()](asio::error_code ec, size_t) {
      if (ec) return;  // the client went away: nothing to answer
      self->on_header();
    });
  }

  // Answers a parked get/wait now that its key is set (called by the server's wake()).
  void key_set(const std::string& key) {
    if (!parked_ || parked_key_ != key) return;
    parked_ = false;
    timer_.cancel();
    answer_parked();
  }

 private:
  void on_header() {
    try {
      header_ = proto::decode_request_header(header_bytes_);
    } catch (const TransportError& e) {
      return drop(e.what());
    }
    // Both lengths are bounded by decode_request_header, so this allocation is too.
    body_.resize(header_.key_bytes + header_.value_bytes);
    asio::async_read(socket_, asio::buffer(body_), [self = shared_from_this()](asio::error_code ec, size_t) {
      if (!ec) self->on_body();
    });
  }

  void on_body() {
    std::string key(reinterpret_cast<const char*>(body_.data()), header_.key_bytes);
    std::string value(reinterpret_cast<const char*>(body_.data()) + header_.key_bytes, header_.value_bytes);
    if (!greeted_ && header_.op != proto::Op::hello) return drop("first request is not a hello");
    switch (header_.op) {
      case proto::Op::hello: return hello(key, value);
      case proto::Op::set:
        server_.data()[key] = value;
        respond(proto::Status::ok, "");
        return server_.wake(key);
      case proto::Op::add: return add(key, value);
      case proto::Op::get:
      case proto::Op::wait:
        parked_key_ = key;
        if (server_.data().count(key) != 0) return answer_parked();
        return park(header_.timeout_ms);
    }
  }

  // The token first: a stranger learns nothing of the job, its id included.
  void hello(const std::string& job_id, const std::string& value) {
    if (greeted_) return drop("a second hello");
    proto::HelloValue hello;
    try {
      hello = proto::decode_hello_value(value);
    } catch (const TransportError& e) {
      return drop(e.what());
    }
    if (!same_job_token(hello.token, server_.job_token()))
      return refuse(hello.rank, hello.token.empty() ? "no job token (RINGGRAD_JOB_TOKEN), and this job has one"
                                                    : "wrong job token (RINGGRAD_JOB_TOKEN differs from rank 0's)");
    if (job_id != server_.job_id())
      return refuse(hello.rank, fmt::format("job id '{}' is not this store's job '{}'", job_id, server_.job_id()));
    greeted_ = true;
    timer_.cancel();
    respond(proto::Status::ok, "");
  }

  void refuse(uint32_t rank, const std::string& reason) {
    fmt::print(stderr, "ringgrad store: refused a client at {} (calling itself rank {}): {}\n", peer_, rank, reason);
    timer_.cancel();
    respond(proto::Status::refused, reason, /*then_close=*/true);
  }

  void add(const std::string& key, const std::string& delta_bytes) {
    int64_t total = 0;
    try {
      total = proto::decode_i64(delta_bytes);
      if (auto it = server_.data().find(key); it != server_.data().end()) total += std::stoll(it->second);
    } catch (const std::exception&) {
      return respond(proto::Status::bad_request, fmt::format("add: key '{}' does not hold an integer", key));
    }
    server_.data()[key] = std::to_string(total);
    respond(proto::Status::ok, proto::encode_i64(total));
    server_.wake(key);
  }

  void park(uint32_t timeout_ms) {
    parked_ = true;
    server_.park(parked_key_, shared_from_this());
    timer_.expires_after(std::chrono::milliseconds(timeout_ms));
    timer_.async_wait([self = shared_from_this()](asio::error_code ec) {
      if (ec || !self->parked_) return;
      self->parked_ = false;
      self->respond(proto::Status::timeout, "");
    });
  }

  void answer_parked() {
    respond(proto::Status::ok, header_.op == proto::Op::get ? server_.data()[parked_key_] : std::string());
  }

  void respond(proto::Status status, std::string_view value, bool then_close = false) {
    response_ = proto::encode_response(status, value);
    asio::async_write(socket_, asio::buffer(response_), [self = shared_from_this(), then_close](asio::error_code ec, size_t) {
      if (!ec && !then_close) self->read_header();
    });
  }

  void drop(const std::string& reason) {
    if (!socket_.is_open()) return;
    fmt::print(stderr, "ringgrad store: closed the connection from {}: {}\n", peer_, reason);
    asio::error_code ignored;
    socket_.close(ignored);
    timer_.cancel();
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  StoreService& server_;
  std::string peer_;
  std::array<std::byte, proto::kRequestFixedBytes> header_bytes_{};
  proto::RequestHeader header_;
  std::vector<std::byte> body_;
  std::vector<std::byte> response_;
  bool greeted_ = false;
  bool parked_ = false;
  std::string parked_key_;
};

StoreService::StoreService(const Config& config)
    : job_id_(config.job_id), job_token_(config.job_token), hello_timeout_(config.timeout) {
  const uint16_t port = config.master_port;
  asio::error_code ec;
  tcp::endpoint endpoint;
  if (net::is_loopback(config.master_addr)) {
    // The job meets on loopback: the store stays there, on the address clients try first.
    tcp::resolver resolver(io_);
    auto found = resolver.resolve(config.master_addr, std::to_string(port), ec);
    if (ec || found.empty())
      throw TransportError(fmt::format("ringgrad store: cannot resolve '{}': {}", config.master_addr, ec.message()));
    endpoint = found.begin()->endpoint();
    acceptor_.open(endpoint.protocol());
  } else {
    // Every interface, IPv6 and IPv4 at once where the host allows it: peers reach rank 0 at
    // whatever MASTER_ADDR names.
    acceptor_.open(tcp::v6(), ec);
    if (!ec) acceptor_.set_option(asio::ip::v6_only(false), ec);
    if (ec) {
      acceptor_.close(ec);
      acceptor_.open(tcp::v4());
    }
    endpoint = tcp::endpoint(acceptor_.local_endpoint().protocol() == tcp::v6() ? asio::ip::address(asio::ip::address_v6::any())
                                                                                  : asio::ip::address(asio::ip::address_v4::any()),
                             port);
  }
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(endpoint, ec);
  if (ec) throw TransportError(fmt::format("ringgrad store: cannot listen on port {}: {}", port, ec.message()));
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

StoreService::~StoreService() {
  io_.stop();
  thread_.join();
}

void StoreService::accept() {
  acceptor_.async_accept([this](asio::error_code ec, tcp::socket socket) {
    if (!ec) std::make_shared<Session>(std::move(socket), *this)->start();
    if (ec != asio::error::operation_aborted) accept();
  });
}

void StoreService::wake(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  std::vector<std::weak_ptr<Session>> sessions = std::move(it->second);
  waiters_.erase(it);
  for (auto& weak : sessions)
    if (auto session = weak.lock()) session->key_set(key);
}

}  // namespace detail

StoreServer::StoreServer(const Config& config) : impl_(std::make_unique<detail::StoreService>(config)) {}
StoreServer::~StoreServer() = default;
uint16_t StoreServer::port() const { return impl_->port(); }

}  // namespace ringgrad::transport
