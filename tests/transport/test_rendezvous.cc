// Rendezvous: who may join a job. A connection without the job's token, with another job id, a
// duplicate rank or a malformed hello is refused with a reason, logged with its address, while
// the job carries on; a job on a network refuses to start without a token; the environment of
// torchrun-style launchers, mpirun and srun all give a valid Config.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/support/multiprocess.h"
#include "transport/net.h"
#include "transport/rendezvous.h"
#include "transport/store_server.h"
#include "transport/transport.h"
#include "transport/wire.h"

namespace {

using namespace std::chrono_literals;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Store;
using ringgrad::transport::Transport;
using ringgrad::transport::TransportError;
namespace net = ringgrad::transport::net;
namespace wire = ringgrad::transport::wire;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

net::Fd connect_to(const std::string& address, net::Clock::time_point deadline) {
  const size_t colon = address.rfind(':');
  return net::connect(address.substr(0, colon), static_cast<uint16_t>(std::stoi(address.substr(colon + 1))), deadline, "knock");
}

// Sends raw bytes to the listener at "host:port" and returns the refusal reason it answers
// with ("" if it accepted or closed without one); `from` gets the address it knocked from.
std::string knock(const std::string& address, const std::vector<std::byte>& bytes, std::string* from = nullptr) {
  const auto deadline = net::Clock::now() + 10s;
  net::Fd fd = connect_to(address, deadline);
  if (from != nullptr) *from = net::local_name(fd.get());
  net::write_all(fd.get(), bytes, deadline, "knock");
  std::array<std::byte, wire::kReplyFixedBytes> fixed{};
  try {
    net::read_exact(fd.get(), fixed, deadline, "knock reply");
  } catch (const TransportError&) {
    return "";
  }
  size_t reason_bytes = 0;
  wire::Reply reply = wire::decode_reply_fixed(fixed, reason_bytes);
  reply.reason.resize(reason_bytes);
  net::read_exact(fd.get(), std::as_writable_bytes(std::span(reply.reason)), deadline, "knock reason");
  return reply.accepted ? "" : reply.reason;
}

}  // namespace

TEST_CASE("rank 0 may hand the transport a store server it started itself") {
  // As a torch process group does: it starts the server first, so it can publish the port.
  const auto results = run_ranks(3, [](const Config& config) {
    std::unique_ptr<ringgrad::transport::StoreServer> server;
    if (config.rank == 0) server = std::make_unique<ringgrad::transport::StoreServer>(config);
    Transport t(config, std::move(server));
    std::array<std::byte, 1> byte{std::byte{7}};
    const int next = (t.rank() + 1) % 3, prev = (t.rank() + 2) % 3;
    auto sent = t.isend(next, byte, 1);
    std::array<std::byte, 1> got{};
    t.recv(prev, got, 1);
    sent.wait();
    check(got[0] == std::byte{7}, "the ring's byte");
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

TEST_CASE("no or a wrong token, another job, a wrong rank or a malformed hello is refused and logged, and the job "
          "carries on") {
  auto results = run_ranks(2, [](const Config& config) {
    // Rank 0 keeps its stderr, where the listener logs each refusal, in a file.
    const std::string log_path = fmt::format("/tmp/ringgrad-rendezvous-test-{}.err", ::getpid());
    if (config.rank == 0) check(std::freopen(log_path.c_str(), "w", stderr) != nullptr, "stderr to " + log_path);
    net::Fd silent;
    if (config.rank == 1) {
      // Before joining, knock on rank 0's listener (it is waiting for rank 1) as intruders would.
      Store store(config.master_addr, config.master_port, config.job_id, config.job_token, 1, config.timeout);
      const std::string rank0 = store.get(ringgrad::transport::address_key(0));
      std::string knocked, from;
      std::string reason = knock(rank0, wire::encode_hello({1, 2, config.job_id, "not-the-token"}), &from);
      check(contains(reason, "wrong job token") && !contains(reason, config.job_id), reason);
      knocked += from + " ";
      reason = knock(rank0, wire::encode_hello({1, 2, config.job_id, ""}), &from);
      check(contains(reason, "no job token"), reason);
      knocked += from + " ";
      reason = knock(rank0, wire::encode_hello({1, 2, "another-job", config.job_token}));
      check(contains(reason, "job id 'another-job' is not this job's"), reason);
      reason = knock(rank0, wire::encode_hello({1, 3, config.job_id, config.job_token}));
      check(contains(reason, "world size 3 is not this job's 2"), reason);
      reason = knock(rank0, wire::encode_hello({0, 2, config.job_id, config.job_token}));
      check(contains(reason, "rank 0 must not connect to rank 0"), reason);
      auto oversized = wire::encode_hello({1, 2, config.job_id, config.job_token});
      wire::put_u16(&oversized[6], 60000);  // a job id length far over the bound
      reason = knock(rank0, oversized);
      check(contains(reason, "job id of 60000 bytes"), reason);
      reason = knock(rank0, std::vector<std::byte>(20, std::byte{0x47}), &from);
      check(contains(reason, "not a ringgrad peer"), reason);
      knocked += from;
      store.set("test/knocked from", knocked);
      silent = connect_to(rank0, net::Clock::now() + 10s);  // says nothing, stays open: no one waits for it
    }
    Transport t(config);
    std::vector<std::byte> data(1000, std::byte{7});
    if (t.rank() == 0) t.send(1, data, 9);
    else {
      std::vector<std::byte> in(1000);
      t.recv(0, in, 9);
      check(in == data, "message after the intruders");
    }
    if (t.rank() != 0) return;
    std::fflush(stderr);
    std::stringstream log;
    log << std::ifstream(log_path).rdbuf();
    std::remove(log_path.c_str());
    std::istringstream knocked(t.store().get("test/knocked from"));
    for (std::string from; knocked >> from;)
      check(contains(log.str(), fmt::format("rank 0: refused a connection from {}: ", from)), from + " in the log: " + log.str());
  });
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}

TEST_CASE("a second process with a rank already taken is refused") {
  auto results = run_ranks(3, [](const Config& config) {
    Config mine = config;
    mine.world_size = 2;
    if (config.rank == 2) {
      // Claims rank 1 once the real rank 1 has registered.
      Store store(config.master_addr, config.master_port, config.job_id, config.job_token, 2, config.timeout);
      store.wait({ringgrad::transport::address_key(1)});
      mine.rank = 1;
      try {
        Transport t(mine);
      } catch (const TransportError& e) {
        check(contains(e.what(), "rank 1 has already joined job"), e.what());
        store.set("test/refused", "");
        return;
      }
      throw std::runtime_error("the duplicate rank 1 joined");
    }
    Transport t(mine);
    std::vector<std::byte> data(4);
    if (t.rank() == 0) t.send(1, data, 0);
    else t.recv(0, data, 0);
    if (t.rank() == 1) t.store().wait({"test/refused"});  // rank 0's store stays up for the duplicate until rank 1 leaves
  });
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}

// Runs fn, which must throw TransportError, and checks its message and that it came within
// `within` (the timeout plus scheduling slack).
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts, std::chrono::milliseconds within) {
  const auto start = net::Clock::now();
  try {
    fn();
  } catch (const TransportError& e) {
    const auto took = net::Clock::now() - start;
    for (const std::string& part : parts) check(contains(e.what(), part), fmt::format("'{}' in: {}", part, e.what()));
    check(took < within, fmt::format("failed after {} ms, not within {} ms: {}",
                                     std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), within.count(), e.what()));
    return;
  }
  throw std::runtime_error("no error");
}

TEST_CASE("a rank that never starts or has another world size fails every rank within the timeout, saying so") {
  ringgrad::test::RunOptions options;
  options.timeout = 1s;
  auto results = run_ranks(3, [](const Config& config) {
    if (config.rank == 1) return;  // never joins
    if (config.rank == 0)
      expect_error([&] { Transport t(config); }, {"rank 0: rendezvous timed out after 1 s waiting for ranks 1 to connect"}, 4s);
    else
      expect_error([&] { Transport t(config); }, {"rank 2: connecting to rank 1: rank 1 did not join within 1 s"}, 4s);
  }, options);
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());

  results = run_ranks(2, [](const Config& config) {
    Config mine = config;
    if (config.rank == 1) {
      mine.world_size = 3;
      expect_error([&] { Transport t(mine); }, {"rank 1: connecting to rank 0", "refused: world size 3 is not this job's 2"}, 4s);
    } else {
      // Rank 0 names the refusal it saw, not only the rank that did not come.
      expect_error([&] { Transport t(mine); }, {"waiting for ranks 1 to connect; refused a connection from", "world size 3"}, 4s);
    }
  }, options);
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}

TEST_CASE("a MASTER_PORT taken by another program fails rank 0 at once and the others within the timeout") {
  ringgrad::test::RunOptions options;
  options.timeout = 1s;
  auto results = run_ranks(1, [](const Config& config) {
    // A listener that is not a store: connections complete in its backlog, nobody answers.
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    check(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 8) == 0 &&
              ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0,
          "a listener");
    Config mine = config;
    mine.world_size = 2;
    mine.master_port = ntohs(addr.sin_port);
    expect_error([&] { Transport t(mine); }, {"rank 0: cannot serve the rendezvous store", "MASTER_PORT is taken"}, 4s);
    mine.rank = 1;
    expect_error([&] { Transport t(mine); }, {"rank 1: store at", "hello", "is the process listening on MASTER_PORT"}, 4s);
    ::close(fd);
  }, options);
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}

TEST_CASE("a MASTER_ADDR that names no host fails at once, not at the timeout") {
  // A typo (or 999.1.1.1) gets the same answer from the resolver however long one waits; a
  // refused connection (rank 0 still starting) is what the timeout is for.
  for (const char* host : {"nosuchhost.invalid", "999.1.1.1"}) {
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host, nullptr, nullptr, &found);
    if (found != nullptr) ::freeaddrinfo(found);
    if (rc != EAI_NONAME && rc != EAI_FAIL) {  // a machine whose resolver cannot be reached, say
      WARN("skipped: the resolver here answers '" << ::gai_strerror(rc) << "' for " << host << ", not 'no such name'");
      continue;
    }
    expect_error([&] { Store store(host, 29500, "job", "", 1, 30s); },
                 {fmt::format("rank 1: store at {}:29500: cannot resolve '{}'", host, host), "MASTER_ADDR must name"}, 5s);
  }
}

TEST_CASE("a job that meets on a network refuses to start without a token, and on loopback it may") {
  Config config;
  config.world_size = 2;
  config.rank = 1;
  config.master_port = 29500;
  config.master_addr = "10.1.2.3";
  expect_error([&] { Transport t(config); },
               {"rank 1: the job meets on a network (MASTER_ADDR '10.1.2.3') but has no job token", "RINGGRAD_JOB_TOKEN"}, 1s);
  config.master_addr = "127.0.0.1";
  config.bind_addr = "10.1.2.4";  // ranks would listen on a network
  expect_error([&] { Transport t(config); }, {"RINGGRAD_BIND_ADDR '10.1.2.4'", "no job token"}, 1s);
  CHECK(!config.loopback_only());
  config.bind_addr = "127.0.0.1";
  CHECK(config.loopback_only());
  config.master_addr = "localhost";
  CHECK(config.loopback_only());

  auto results = run_ranks(2, [](const Config& given) {
    Config by_hand = given;
    by_hand.job_token.clear();  // as a job started by hand without RINGGRAD_JOB_TOKEN
    Transport t(by_hand);
    int64_t value = t.rank() + 40, other = 0;
    auto request = t.isend(1 - t.rank(), std::as_bytes(std::span(&value, 1)), 0);
    t.recv(1 - t.rank(), std::as_writable_bytes(std::span(&other, 1)), 0);
    request.wait();
    check(other == 41 - t.rank(), fmt::format("got {}", other));
  });
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}

TEST_CASE("Config::from_env reads torchrun, Open MPI, MPICH and Slurm variables") {
  for (const char* name : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                           "SLURM_PROCID", "SLURM_NTASKS", "MASTER_ADDR", "MASTER_PORT", "RINGGRAD_JOB_ID",
                           "RINGGRAD_JOB_TOKEN", "RINGGRAD_TIMEOUT", "RINGGRAD_BIND_ADDR", "SLURM_JOB_ID", "SLURM_STEP_ID"})
    ::unsetenv(name);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("no rank in the environment"));

  // Under mpirun the rendezvous may be left out: backend mpi finds it (master_port stays 0).
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  Config c = Config::from_env();
  CHECK((c.rank == 1 && c.world_size == 2 && c.master_port == 0 && c.job_token.empty()));
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("PMI_RANK", "2", 1);  // MPICH's mpiexec
  ::setenv("PMI_SIZE", "3", 1);
  ::setenv("SLURM_PROCID", "0", 1);  // the allocation's, inherited by mpiexec inside it: not the rank
  ::setenv("SLURM_NTASKS", "1", 1);
  ::setenv("MASTER_ADDR", "10.1.2.3", 1);  // one without the other is a mistake
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("MASTER_PORT is not set"));
  ::setenv("MASTER_PORT", "29500", 1);
  ::setenv("RINGGRAD_JOB_TOKEN", "s3cret", 1);
  c = Config::from_env();
  CHECK((c.rank == 2 && c.world_size == 3 && c.master_port == 29500 && c.job_token == "s3cret"));
  for (const char* name : {"PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "RINGGRAD_JOB_TOKEN"}) ::unsetenv(name);

  ::setenv("MASTER_ADDR", "10.1.2.3", 1);
  ::setenv("MASTER_PORT", "29500", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  c = Config::from_env();
  CHECK((c.rank == 3 && c.world_size == 4 && c.master_addr == "10.1.2.3" && c.master_port == 29500));

  ::setenv("SLURM_PROCID", "1", 1);  // Open MPI's variables come first when both are set
  ::setenv("SLURM_NTASKS", "2", 1);
  CHECK(Config::from_env().rank == 3);
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("SLURM_JOB_ID", "777", 1);
  ::setenv("SLURM_STEP_ID", "2", 1);
  c = Config::from_env();
  CHECK((c.rank == 1 && c.world_size == 2 && c.job_id == "slurm-777.2"));

  ::setenv("RANK", "0", 1);  // torchrun-style variables win over both
  ::setenv("WORLD_SIZE", "8", 1);
  ::setenv("RINGGRAD_JOB_ID", "job", 1);
  ::setenv("RINGGRAD_TIMEOUT", "7", 1);
  ::setenv("RINGGRAD_BIND_ADDR", "10.1.2.4", 1);
  c = Config::from_env();
  CHECK((c.rank == 0 && c.world_size == 8 && c.job_id == "job" && c.timeout == 7s && c.bind_addr == "10.1.2.4"));

  ::setenv("RANK", "8", 1);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("RANK='8' is not an integer in [0, 7]"));
  ::setenv("RANK", "x", 1);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("RANK='x'"));
  ::setenv("RANK", "1", 1);
  ::unsetenv("MASTER_PORT");
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("MASTER_PORT is not set"));
  ::setenv("MASTER_PORT", "70000", 1);
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("MASTER_PORT='70000'"));
  ::unsetenv("WORLD_SIZE");
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("RANK and WORLD_SIZE must be set together"));
}
