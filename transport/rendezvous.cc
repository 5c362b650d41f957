// Rendezvous: the accepting half runs on a short-lived Asio thread (so handshakes proceed
// concurrently and a silent or hostile client cannot block the job), the connecting half on
// the calling thread. The listener closes as soon as the mesh is complete: nobody joins later.

#include "transport/rendezvous.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <asio.hpp>
#include <fmt/format.h>

#include "transport/error.h"
#include "transport/job_token.h"
#include "transport/wire.h"

namespace ringgrad::transport {
namespace {

using asio::ip::tcp;

// What the acceptor has collected so far; shared by the handshake handlers and the caller.
struct Accepted {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<net::Fd> fds;  // by rank
  int missing = 0;
  std::vector<std::string> refused;  // why connections were refused, for the timeout's message
};

// One incoming connection: read and check the hello, reply, hand the socket over if accepted.
class Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  Handshake(tcp::socket socket, const Config& config, Accepted& accepted, net::Clock::time_point deadline)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), config_(config), accepted_(accepted) {
    asio::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    from_ = ec ? "?" : fmt::format("{}:{}", remote.address().to_string(), remote.port());
    timer_.expires_at(deadline);
  }

  void start() {
    timer_.async_wait([self = shared_from_this()](asio::error_code ec) {
      if (!ec) self->refuse("no hello before the rendezvous deadline");
    });
    asio::async_read(socket_, asio::buffer(fixed_), [self = shared_from_this()](asio::error_code ec, size_t) {
      if (ec) {
        self->timer_.cancel();
        return;
      }
      size_t job_id_bytes = 0, token_bytes = 0;
      try {
        self->hello_ = wire::decode_hello_fixed(self->fixed_, job_id_bytes, token_bytes);
      } catch (const TransportError& e) {
        self->refuse(e.what());
        return;
      }
      self->rest_.resize(job_id_bytes + token_bytes);  // at most wire::kMaxJobIdBytes + wire::kMaxTokenBytes
      asio::async_read(self->socket_, asio::buffer(self->rest_), [self, job_id_bytes](asio::error_code ec2, size_t) {
        if (ec2) return static_cast<void>(self->timer_.cancel());
        self->hello_.job_id.assign(self->rest_.begin(), self->rest_.begin() + static_cast<std::ptrdiff_t>(job_id_bytes));
        self->hello_.token.assign(self->rest_.begin() + static_cast<std::ptrdiff_t>(job_id_bytes), self->rest_.end());
        self->check();
      });
    });
  }

 private:
  void check() {
    const Hello& h = hello_;
    // The token first: a stranger learns nothing of the job, its id included.
    if (!same_job_token(h.token, config_.job_token))
      return refuse(h.token.empty() ? "no job token (RINGGRAD_JOB_TOKEN), and this job has one"
                                    : "wrong job token (RINGGRAD_JOB_TOKEN differs from this rank's)");
    if (h.job_id != config_.job_id) return refuse(fmt::format("job id '{}' is not this job's '{}'", h.job_id, config_.job_id));
    if (h.world_size != config_.world_size)
      return refuse(fmt::format("world size {} is not this job's {}", h.world_size, config_.world_size));
    if (h.rank <= config_.rank)
      return refuse(fmt::format("rank {} must not connect to rank {} (each rank connects to lower ranks only)", h.rank, config_.rank));
    bool duplicate = false;
    {
      std::lock_guard lock(accepted_.mutex);
      duplicate = accepted_.fds[static_cast<size_t>(h.rank)].get() >= 0;
    }
    if (duplicate) return refuse(fmt::format("rank {} is already connected (two processes with the same rank?)", h.rank));
    reply_ = wire::encode_reply({true, config_.rank, {}});
    asio::async_write(socket_, asio::buffer(reply_), [self = shared_from_this()](asio::error_code ec, size_t) {
      self->timer_.cancel();
      if (ec) return;
      std::lock_guard lock(self->accepted_.mutex);
      net::Fd& slot = self->accepted_.fds[static_cast<size_t>(self->hello_.rank)];
      if (slot.get() >= 0) return;  // a duplicate raced this one and won
      slot = net::Fd(self->socket_.release());
      --self->accepted_.missing;
      self->accepted_.changed.notify_all();
    });
  }

  void refuse(const std::string& reason) {
    fmt::print(stderr, "ringgrad transport: rank {}: refused a connection from {}: {}\n", config_.rank, from_, reason);
    {
      std::lock_guard lock(accepted_.mutex);
      if (accepted_.refused.size() < 4) accepted_.refused.push_back(fmt::format("from {}: {}", from_, reason));
    }
    timer_.cancel();
    reply_ = wire::encode_reply({false, config_.rank, reason});
    asio::async_write(socket_, asio::buffer(reply_), [self = shared_from_this()](asio::error_code, size_t) {
      asio::error_code ignored;
      self->socket_.close(ignored);
    });
  }

  using Hello = wire::Hello;
  tcp::socket socket_;
  asio::steady_timer timer_;
  const Config& config_;
  Accepted& accepted_;
  std::string from_;
  std::array<std::byte, wire::kHelloFixedBytes> fixed_{};
  std::string rest_;  // job id, then token
  Hello hello_;
  std::vector<std::byte> reply_;
};

void accept_loop(tcp::acceptor& acceptor, const Config& config, Accepted& accepted, net::Clock::time_point deadline) {
  acceptor.async_accept([&, deadline](asio::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      net::tune(socket.native_handle());
      std::make_shared<Handshake>(std::move(socket), config, accepted, deadline)->start();
    }
    accept_loop(acceptor, config, accepted, deadline);
  });
}

// Connects to the lower rank `peer` at the address it published and exchanges hello/reply.
net::Fd connect_to(const Config& config, Store& store, int peer, net::Clock::time_point deadline) {
  const std::string where = fmt::format("ringgrad transport: rank {}: connecting to rank {}", config.rank, peer);
  std::string address;
  try {
    address = store.get(address_key(peer), std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - net::Clock::now()),
                                                    std::chrono::milliseconds(0)));
  } catch (const TransportError& e) {
    throw TransportError(fmt::format("{}: rank {} did not join within {} s (has it started, with this job's WORLD_SIZE, "
                                     "MASTER_ADDR, MASTER_PORT, RINGGRAD_JOB_ID and RINGGRAD_JOB_TOKEN?): {}",
                                     where, peer, std::chrono::duration<double>(config.timeout).count(), e.what()));
  }
  const size_t colon = address.rfind(':');
  const std::string host = address.substr(0, colon);
  const auto port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));
  net::Fd fd = net::connect(host, port, deadline, where);
  std::vector<std::byte> hello = wire::encode_hello({config.rank, config.world_size, config.job_id, config.job_token});
  net::write_all(fd.get(), hello, deadline, where);
  std::array<std::byte, wire::kReplyFixedBytes> fixed;
  net::read_exact(fd.get(), fixed, deadline, where);
  size_t reason_bytes = 0;
  wire::Reply reply = wire::decode_reply_fixed(fixed, reason_bytes);
  reply.reason.resize(reason_bytes);
  net::read_exact(fd.get(), std::as_writable_bytes(std::span(reply.reason)), deadline, where);
  if (!reply.accepted) throw TransportError(fmt::format("{} at {}: refused: {}", where, address, reply.reason));
  if (reply.rank != peer)
    throw TransportError(fmt::format("{} at {}: the process there is rank {}", where, address, reply.rank));
  return fd;
}

std::string listen_address(const Config& config) {
  if (const auto& bind = config.bind_addr; !bind.empty()) return bind;
  return net::local_address_towards(config.master_addr, config.master_port);
}

}  // namespace

std::string address_key(int rank) { return fmt::format("ringgrad/addr/{}", rank); }

std::vector<net::Fd> connect_mesh(const Config& config, Store& store) {
  const auto deadline = net::Clock::now() + config.timeout;
  if (int64_t n = store.add(fmt::format("ringgrad/rank/{}", config.rank), 1); n != 1)
    throw TransportError(fmt::format("ringgrad transport: rank {} has already joined job '{}' ({} processes claim it): "
                                     "check RANK/WORLD_SIZE",
                                     config.rank, config.job_id, n));

  Accepted accepted;
  accepted.fds.resize(static_cast<size_t>(config.world_size));
  accepted.missing = config.world_size - 1 - config.rank;

  asio::io_context io;
  tcp::acceptor acceptor(io);
  std::string host;
  try {
    host = listen_address(config);
  } catch (const TransportError& e) {
    throw TransportError(fmt::format("ringgrad transport: rank {}: cannot find the address to listen on towards "
                                     "MASTER_ADDR '{}': {}",
                                     config.rank, config.master_addr, e.what()));
  }
  try {
    acceptor.open(tcp::endpoint(asio::ip::make_address(host), 0).protocol());
    acceptor.bind(tcp::endpoint(asio::ip::make_address(host), 0));
    acceptor.listen();
  } catch (const std::exception& e) {
    throw TransportError(fmt::format("ringgrad transport: rank {}: cannot listen on '{}' (RINGGRAD_BIND_ADDR or "
                                     "Config::bind_addr must be an IP address of this host): {}",
                                     config.rank, host, e.what()));
  }
  accept_loop(acceptor, config, accepted, deadline);
  std::thread acceptor_thread([&io] { io.run(); });
  struct Stop {  // the acceptor thread stops however this function ends
    asio::io_context& io;
    std::thread& thread;
    ~Stop() {
      io.stop();
      thread.join();
    }
  } stop{io, acceptor_thread};

  store.set(address_key(config.rank), fmt::format("{}:{}", host, acceptor.local_endpoint().port()));
  std::vector<net::Fd> fds(static_cast<size_t>(config.world_size));
  for (int peer = 0; peer < config.rank; ++peer) fds[static_cast<size_t>(peer)] = connect_to(config, store, peer, deadline);

  std::unique_lock lock(accepted.mutex);
  if (!accepted.changed.wait_until(lock, deadline, [&] { return accepted.missing == 0; })) {
    // The first few missing ranks, not all of them: a job of a million ranks makes a long line.
    constexpr int kListed = 16;
    std::string missing;
    int count = 0;
    for (int peer = config.rank + 1; peer < config.world_size; ++peer)
      if (accepted.fds[static_cast<size_t>(peer)].get() < 0 && ++count <= kListed) missing += fmt::format(" {}", peer);
    if (count > kListed) missing += fmt::format(" ... ({} ranks in all)", count);
    std::string refused;
    for (const std::string& reason : accepted.refused) refused += fmt::format("; refused a connection {}", reason);
    throw TransportError(fmt::format("ringgrad transport: rank {}: rendezvous timed out after {} s waiting for ranks{} "
                                     "to connect{}",
                                     config.rank, std::chrono::duration<double>(config.timeout).count(), missing, refused));
  }
  for (int peer = config.rank + 1; peer < config.world_size; ++peer)
    fds[static_cast<size_t>(peer)] = std::move(accepted.fds[static_cast<size_t>(peer)]);
  return fds;
}

}  // namespace ringgrad::transport
