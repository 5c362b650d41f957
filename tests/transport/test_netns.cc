// Two ranks in two Linux network namespaces joined by a veth pair: rendezvous and messages go
// over the 10.200.x.0/24 addresses inside those namespaces (no loopback shortcut, and no
// traffic to any other host). Needs root and iproute2; skipped with a message otherwise.

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/support/multiprocess.h"
#include "transport/rendezvous.h"
#include "transport/transport.h"

namespace {

using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::RunOptions;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Transport;

bool sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

// Namespaces <name>a and <name>b, with veth ends addressed subnet.1 and subnet.2; removed on
// destruction (which removes the veth pair too).
class NetnsPair {
 public:
  explicit NetnsPair(std::string name, std::string subnet) : name_(std::move(name)), subnet_(std::move(subnet)) {
    ok_ = sh(fmt::format("ip netns add {}a && ip netns add {}b", name_, name_)) &&
          sh(fmt::format("ip link add {}a type veth peer name {}b", name_, name_)) &&
          sh(fmt::format("ip link set {}a netns {}a && ip link set {}b netns {}b", name_, name_, name_, name_));
    for (char side : {'a', 'b'})
      ok_ = ok_ && sh(fmt::format("ip -n {0}{1} addr add {2}.{3}/24 dev {0}{1} && ip -n {0}{1} link set {0}{1} up && "
                                  "ip -n {0}{1} link set lo up",
                                  name_, side, subnet_, side == 'a' ? 1 : 2));
  }
  ~NetnsPair() { sh(fmt::format("ip netns del {}a; ip netns del {}b", name_, name_)); }
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;
  bool ok() const { return ok_; }

 private:
  std::string name_, subnet_;
  bool ok_ = false;
};

}  // namespace

TEST_CASE("ranks in two network namespaces rendezvous and exchange data over a veth pair") {
  const std::string name = fmt::format("rg{}", ::getpid() % 100000);
  const std::string subnet = fmt::format("10.200.{}", ::getpid() % 250 + 1);
  NetnsPair netns(name, subnet);
  if (!netns.ok()) {
    WARN("skipped: cannot create network namespaces and a veth pair here (needs root and iproute2)");
    return;
  }
  RunOptions options;
  options.master_addr = subnet + ".1";
  options.setup = [&](int rank) {  // each child enters its namespace before any socket exists
    int fd = ::open(fmt::format("/var/run/netns/{}{}", name, rank == 0 ? 'a' : 'b').c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) throw std::runtime_error("cannot enter the network namespace");
    ::close(fd);
  };
  auto results = run_ranks(2, [&](const Config& config) {
    Transport t(config);
    // Each rank listens on the address it uses towards MASTER_ADDR: its veth address.
    const std::string peer_address = t.store().get(ringgrad::transport::address_key(1 - t.rank()));
    check(peer_address.rfind(fmt::format("{}.{}:", subnet, t.rank() == 0 ? 2 : 1), 0) == 0, "peer address " + peer_address);
    std::vector<std::byte> out(size_t{3} << 20), in(out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 7 + static_cast<size_t>(t.rank()));
    auto request = t.isend(1 - t.rank(), out, 1);
    t.recv(1 - t.rank(), in, 1);
    request.wait();
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] != static_cast<std::byte>(i * 7 + static_cast<size_t>(1 - t.rank()))) check(false, fmt::format("byte {}", i));
  }, options);
  INFO(describe(results));
  REQUIRE(results[0].ok());
  REQUIRE(results[1].ok());
}
