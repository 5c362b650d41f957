// The rendezvous store: set/get/add/wait semantics across real processes, timeouts that name
// the key, and a server that refuses clients without the job's token, of other jobs, silent or
// sending malformed requests, names each in its log, and keeps serving.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <functional>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "tests/support/multiprocess.h"
#include "transport/error.h"
#include "transport/net.h"
#include "transport/store.h"
#include "transport/store_protocol.h"
#include "transport/store_server.h"
#include "transport/wire.h"

namespace {

using namespace std::chrono_literals;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Store;
using ringgrad::transport::StoreServer;
using ringgrad::transport::TransportError;
namespace net = ringgrad::transport::net;
namespace proto = ringgrad::transport::store_protocol;

// Rank 0 serves and every rank (rank 0 too) is a client, as in a Transport. A closing barrier,
// then rank 0 leaves last: it waits until every other rank has said so, since a rank still
// waiting for the barrier's reply when the server closes reads a reset connection.
void with_store(const Config& config, const std::function<void(Store&)>& body) {
  std::unique_ptr<StoreServer> server;
  if (config.rank == 0) server = std::make_unique<StoreServer>(config);
  Store store(config.master_addr, config.master_port, config.job_id, config.job_token, config.rank, config.timeout);
  body(store);
  if (store.add("test/finished", 1) == config.world_size) store.set("test/all finished", "");
  else store.wait({"test/all finished"});
  if (config.rank != 0) {
    store.add("test/left", 1);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + config.timeout;
  while (store.add("test/left", 0) < config.world_size - 1) {
    check(std::chrono::steady_clock::now() < deadline, "every other rank left before the timeout");
    std::this_thread::sleep_for(1ms);
  }
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A store served on loopback for the job `job_id` with `token`, a connection silent for
// `hello_timeout` before its hello dropped.
Config store_config(const std::string& job_id, const std::string& token,
                    std::chrono::milliseconds hello_timeout = std::chrono::seconds(60)) {
  Config config;
  config.job_id = job_id;
  config.job_token = token;
  config.timeout = hello_timeout;
  return config;
}

// What this process writes to stderr (fd 2) while it lives, kept in a file: the store server's
// log lines, from its own thread.
class CapturedStderr {
 public:
  CapturedStderr() : path_(fmt::format("/tmp/ringgrad-store-test-{}.err", ::getpid())) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(path_.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~CapturedStderr() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::remove(path_.c_str());
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

}  // namespace

TEST_CASE("store: get waits for set and add is atomic across processes and wait sees every key") {
  constexpr int kRanks = 4, kAdds = 50;
  auto results = run_ranks(kRanks, [](const Config& config) {
    with_store(config, [&](Store& store) {
      // Each rank publishes a value and reads everyone's, blocking until each is there.
      store.set(fmt::format("value/{}", config.rank), fmt::format("from rank {}", config.rank));
      for (int r = 0; r < kRanks; ++r) check(store.get(fmt::format("value/{}", r)) == fmt::format("from rank {}", r), "get");
      for (int i = 0; i < kAdds; ++i) store.add("counter", 1);
      store.set(fmt::format("added/{}", config.rank), "");
      std::vector<std::string> keys;
      for (int r = 0; r < kRanks; ++r) keys.push_back(fmt::format("added/{}", r));
      store.wait(keys);
      check(store.add("counter", 0) == kRanks * kAdds, "counter = ranks x adds");
      // Values are bytes: empty ones, and zeros inside.
      const std::string binary("a\0b\0", 4);
      store.set(fmt::format("binary/{}", config.rank), binary);
      check(store.get(fmt::format("binary/{}", config.rank)) == binary, "binary value");
      store.set("empty", "");
      check(store.get("empty").empty(), "empty value");
    });
  });
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}

TEST_CASE("store: get and wait on a key nobody sets time out naming the key") {
  StoreServer server(store_config("job", ""));
  Store store("127.0.0.1", server.port(), "job", "", 3, 5s);
  store.set("present", "1");
  std::string error;
  try {
    store.get("never set", 300ms);
  } catch (const TransportError& e) {
    error = e.what();
  }
  CHECK(contains(error, "rank 3: store at 127.0.0.1:"));
  CHECK(contains(error, "get 'never set' timed out after 0.3 s"));
  error.clear();
  try {
    store.wait({"present", "missing"}, 300ms);
  } catch (const TransportError& e) {
    error = e.what();
  }
  CHECK(contains(error, "wait timed out after 0.3 s: key 'missing' was never set"));
  // The connection is still in step after the timeouts.
  CHECK(store.get("present") == "1");
  CHECK(store.add("n", 5) == 5);
  store.set("text", "x");
  CHECK_THROWS_WITH(store.add("text", 1), Catch::Contains("does not hold an integer"));
}

TEST_CASE("store: a client without the token, of another job, silent or malformed is dropped and logged, and the "
          "store keeps serving") {
  StoreServer server(store_config("job-a", "secret", 500ms));
  Store ours("127.0.0.1", server.port(), "job-a", "secret", 0, 5s);
  ours.set("k", "v");
  CapturedStderr log;
  // Refused with a reason that names nothing of the job but the token; the job id only once
  // the token is right.
  std::string error;
  try {
    Store("127.0.0.1", server.port(), "job-a", "wrong", 1, 5s);
  } catch (const TransportError& e) {
    error = e.what();
  }
  CHECK(contains(error, "refused: wrong job token"));
  CHECK(!contains(error, "job-a"));
  CHECK_THROWS_WITH(Store("127.0.0.1", server.port(), "job-a", "", 1, 5s), Catch::Contains("refused: no job token"));
  CHECK_THROWS_WITH(Store("127.0.0.1", server.port(), "job-b", "secret", 1, 5s),
                    Catch::Contains("job id 'job-b' is not this store's job 'job-a'"));

  const auto deadline = net::Clock::now() + 5s;
  std::array<std::byte, proto::kResponseFixedBytes> response{};
  const auto hello = [](const std::string& token) {
    return proto::encode_request(proto::Op::hello, "job-a", proto::encode_hello_value({2, token}), 0);
  };
  // Each stranger's address is in the log line that refused or dropped it.
  {
    net::Fd fd = net::connect("127.0.0.1", server.port(), deadline, "test client");
    net::write_all(fd.get(), hello("secreT"), deadline, "hello with a wrong token");
    net::read_exact(fd.get(), response, deadline, "refusal");
    CHECK(proto::decode_response_header(response).status == proto::Status::refused);
    CHECK(contains(log.text(), fmt::format("refused a client at {} (calling itself rank 2): wrong job token", net::local_name(fd.get()))));
  }
  // Silent, or silent after part of a hello: dropped when the hello timeout passes.
  const std::vector<std::byte> good_hello = hello("secret");
  for (size_t sent : {size_t{0}, size_t{10}}) {
    net::Fd fd = net::connect("127.0.0.1", server.port(), deadline, "test client");
    net::write_all(fd.get(), std::span(good_hello).first(sent), deadline, "part of a hello");
    CHECK_THROWS_AS(net::read_exact(fd.get(), response, deadline, "silence"), TransportError);  // closed
    CHECK(contains(log.text(), fmt::format("closed the connection from {}: no hello within 0.5 s", net::local_name(fd.get()))));
  }
  // Garbage instead of a hello, and a value over the bound after a good one: dropped before
  // anything is allocated.
  auto huge = proto::encode_request(proto::Op::set, "k", "", 0);
  ringgrad::transport::wire::put_u64(&huge[16], proto::kMaxValueBytes + 1);
  const std::pair<bool, std::vector<std::byte>> garbages[] = {{false, std::vector<std::byte>(24, std::byte{0x41})},
                                                              {true, huge}};
  for (const auto& [greet, garbage] : garbages) {
    net::Fd fd = net::connect("127.0.0.1", server.port(), deadline, "test client");
    if (greet) {
      net::write_all(fd.get(), good_hello, deadline, "hello");
      net::read_exact(fd.get(), response, deadline, "hello response");
      CHECK(proto::decode_response_header(response).status == proto::Status::ok);
    }
    net::write_all(fd.get(), garbage, deadline, "garbage");
    CHECK_THROWS_AS(net::read_exact(fd.get(), response, deadline, "after garbage"), TransportError);  // closed or reset
    CHECK(contains(log.text(), fmt::format("closed the connection from {}: malformed store message", net::local_name(fd.get()))));
  }
  // Before the hello, nothing else is served.
  {
    net::Fd fd = net::connect("127.0.0.1", server.port(), deadline, "test client");
    net::write_all(fd.get(), proto::encode_request(proto::Op::get, "k", "", 0), deadline, "get without hello");
    CHECK_THROWS_AS(net::read_exact(fd.get(), response, deadline, "no hello"), TransportError);
  }
  CHECK(ours.get("k") == "v");
}

