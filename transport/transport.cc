// Transport: joins the job (store, rendezvous), then owns the connections and the progress
// thread that drives asynchronous operations. Request is a thin handle on a heap Op.

#include "transport/transport.h"

#include <unistd.h>

#include <exception>

#include <thread>
#include <vector>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <fmt/format.h>

#include "transport/connection.h"
#include "transport/rendezvous.h"
#include "transport/store_server.h"
#include "transport/wire.h"

namespace ringgrad::transport {
namespace detail {

class Engine {
 public:
  Engine(const Config& config, std::unique_ptr<StoreServer> server);
  ~Engine();

  const Config& config() const { return config_; }
  Store& store() { return *store_; }
  void abort(const std::string& cause) {
    for (auto& conn : peers_)
      if (conn) conn->fail(cause);
  }
  // The connection to peer, or TransportError naming the operation when peer is not one.
  const std::shared_ptr<Connection>& peer(int peer, const char* op) const;

 private:
  static Config validated(Config config);
  void leave();

  Config config_;
  std::unique_ptr<StoreServer> server_;  // rank 0 only
  std::unique_ptr<Store> store_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  std::vector<std::shared_ptr<Connection>> peers_;
  std::thread progress_;
};

Config Engine::validated(Config config) {
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size)
    throw TransportError(fmt::format("ringgrad transport: rank {} is not in [0, world size {})", config.rank, config.world_size));
  if (config.master_port == 0 && config.world_size > 1)
    throw TransportError(fmt::format("ringgrad transport: rank {}: no rendezvous: a job of {} ranks needs MASTER_ADDR and "
                                     "MASTER_PORT, the host and port of rank 0's store (ringgrad-run sets them; under "
                                     "mpirun pass -x MASTER_ADDR=host -x MASTER_PORT=port, or run backend mpi, which "
                                     "finds rank 0 through MPI)",
                                     config.rank, config.world_size));
  if (config.job_token.size() > wire::kMaxTokenBytes)
    throw TransportError(fmt::format("ringgrad transport: rank {}: a job token of {} bytes; at most {} (RINGGRAD_JOB_TOKEN)",
                                     config.rank, config.job_token.size(), wire::kMaxTokenBytes));
  // Without a token anyone who reaches the ports could join or feed the job; on loopback only
  // processes of this host can, as with any local service, so a job by hand may go without.
  if (config.job_token.empty() && config.world_size > 1 && !config.loopback_only())
    throw TransportError(fmt::format("ringgrad transport: rank {}: the job meets on a network (MASTER_ADDR '{}'{}) but has "
                                     "no job token: set RINGGRAD_JOB_TOKEN to one secret on every rank, e.g. "
                                     "export RINGGRAD_JOB_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')",
                                     config.rank, config.master_addr,
                                     config.bind_addr.empty() ? "" : fmt::format(", RINGGRAD_BIND_ADDR '{}'", config.bind_addr)));
  if (config.timeout.count() <= 0)
    throw TransportError(fmt::format("ringgrad transport: rank {}: the timeout is {} ms; it must be positive (RINGGRAD_TIMEOUT "
                                     "seconds or Config::timeout)",
                                     config.rank, config.timeout.count()));
  return config;
}

Engine::Engine(const Config& config, std::unique_ptr<StoreServer> server)
    : config_(validated(config)), server_(std::move(server)) {
  if (config_.rank == 0 && !server_) {
    try {
      server_ = std::make_unique<StoreServer>(config_);
    } catch (const TransportError& e) {
      const bool privileged = config_.master_port < 1024 && ::geteuid() != 0;
      throw TransportError(fmt::format("ringgrad transport: rank 0: cannot serve the rendezvous store: {} ({})", e.what(),
                                       privileged ? "ports below 1024 need root: choose a MASTER_PORT from 1024 up"
                                                  : "MASTER_PORT is taken: by another job or program, or by a "
                                                    "second process with RANK=0?"));
    }
  }
  const uint16_t store_port = server_ ? server_->port() : config_.master_port;  // a lone rank 0 may use any port
  store_ = std::make_unique<Store>(config_.master_addr, store_port, config_.job_id, config_.job_token, config_.rank,
                                   config_.timeout);
  std::vector<net::Fd> fds = connect_mesh(config_, *store_);
  peers_.resize(fds.size());
  for (size_t peer = 0; peer < fds.size(); ++peer)
    if (fds[peer].get() >= 0)
      peers_[peer] = std::make_shared<Connection>(io_, std::move(fds[peer]), config_.rank, static_cast<int>(peer),
                                                  config_.timeout, config_.receive_poll);
  progress_ = std::thread([this] { io_.run(); });
}

// Rank 0 serves the store, so it leaves last: the others may still need the store after their
// last message to rank 0. Each other rank marks its leaving; rank 0 waits for every peer whose
// connection is still open, at most the timeout (a dead peer's connection is closed).
void Engine::leave() {
  const auto left_key = [](int rank) { return fmt::format("ringgrad/left/{}", rank); };
  try {
    if (config_.rank != 0) return store_->set(left_key(config_.rank), "");
    const auto deadline = std::chrono::steady_clock::now() + config_.timeout;
    for (int peer = 1; peer < config_.world_size; ++peer) {
      while (std::chrono::steady_clock::now() < deadline && peers_[static_cast<size_t>(peer)]->open()) {
        try {
          store_->wait({left_key(peer)}, std::chrono::milliseconds(100));
          break;
        } catch (const TransportError&) {
          // Not yet: look at the connection again, then wait once more.
        }
      }
    }
  } catch (const TransportError&) {
    // The store itself is gone (rank 0 died): nobody is left to wait for.
  }
}

Engine::~Engine() {
  leave();
  for (auto& conn : peers_)
    if (conn) conn->fail("the transport was shut down");
  work_.reset();
  io_.stop();
  progress_.join();
  for (auto& conn : peers_)
    if (conn) conn->close();
}

const std::shared_ptr<Connection>& Engine::peer(int peer, const char* op) const {
  if (peer < 0 || peer >= config_.world_size || peer == config_.rank)
    throw TransportError(fmt::format("ringgrad transport: rank {}: {} with peer {}: not another rank of [0, {})", config_.rank,
                                     op, peer, config_.world_size));
  return peers_[static_cast<size_t>(peer)];
}

}  // namespace detail

// --- Request -----------------------------------------------------------------------------------

Request::Request() = default;
Request::Request(std::unique_ptr<detail::Op> op) : op_(std::move(op)) {}
Request::Request(Request&&) noexcept = default;

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    Request finished(std::move(*this));  // waits for the old operation before taking the new one
    op_ = std::move(other.op_);
  }
  return *this;
}

Request::~Request() {
  if (!op_) return;
  try {
    // Dropped unfinished while an exception unwinds, the operation will never be waited for:
    // its stream may stop mid-message, and the peer may be blocked on it. Failing the
    // connection ends both now, instead of this rank and the peer each waiting out the timeout.
    if (std::uncaught_exceptions() > 0 && !test()) op_->conn->fail("an operation was abandoned by an error on this rank");
    wait();
  } catch (const TransportError&) {
    // Nobody asked for the outcome; waiting only keeps the buffer safe.
  }
}

void Request::wait() {
  if (op_) op_->conn->channel(op_->dir).wait(*op_);
}

bool Request::test() { return !op_ || op_->conn->channel(op_->dir).test(*op_); }

// --- Transport ---------------------------------------------------------------------------------

namespace {

// A send only reads its buffer; Op holds one non-const pointer for both directions.
detail::Op make_op(detail::Direction dir, const std::byte* data, size_t size, uint64_t tag, uint32_t stream) {
  detail::Op op;
  op.dir = dir;
  op.stream = stream;
  op.data = const_cast<std::byte*>(data);
  op.size = size;
  op.tag = tag;
  return op;
}

}  // namespace

Transport::Transport(const Config& config) : Transport(config, nullptr) {}
Transport::Transport(const Config& config, std::unique_ptr<StoreServer> server)
    : engine_(std::make_unique<detail::Engine>(config, std::move(server))) {}
Transport::~Transport() = default;

int Transport::rank() const { return engine_->config().rank; }
int Transport::world_size() const { return engine_->config().world_size; }
std::chrono::milliseconds Transport::timeout() const { return engine_->config().timeout; }
void Transport::abort(const std::string& cause) { engine_->abort(cause); }
bool Transport::connected(int peer) const { return engine_->peer(peer, "connected")->open(); }

Store& Transport::store() { return engine_->store(); }

void Transport::send(int peer, std::span<const std::byte> data, uint64_t tag, uint32_t stream) {
  detail::Op op = make_op(detail::Direction::send, data.data(), data.size(), tag, stream);
  engine_->peer(peer, "send")->channel(detail::Direction::send).run(op);
}

void Transport::recv(int peer, std::span<std::byte> data, uint64_t tag, uint32_t stream) {
  detail::Op op = make_op(detail::Direction::recv, data.data(), data.size(), tag, stream);
  engine_->peer(peer, "recv")->channel(detail::Direction::recv).run(op);
}

std::size_t Transport::recv_up_to(int peer, std::span<std::byte> data, uint64_t tag, uint32_t stream) {
  detail::Op op = make_op(detail::Direction::recv, data.data(), data.size(), tag, stream);
  op.up_to = true;
  engine_->peer(peer, "recv")->channel(detail::Direction::recv).run(op);
  return op.size;
}

Request Transport::isend(int peer, std::span<const std::byte> data, uint64_t tag, uint32_t stream) {
  auto op = std::make_unique<detail::Op>(make_op(detail::Direction::send, data.data(), data.size(), tag, stream));
  op->conn = engine_->peer(peer, "isend");
  op->conn->channel(op->dir).start(*op);
  return Request(std::move(op));
}

Request Transport::irecv(int peer, std::span<std::byte> data, uint64_t tag, uint32_t stream) {
  auto op = std::make_unique<detail::Op>(make_op(detail::Direction::recv, data.data(), data.size(), tag, stream));
  op->conn = engine_->peer(peer, "irecv");
  op->conn->channel(op->dir).start(*op);
  return Request(std::move(op));
}

}  // namespace ringgrad::transport
