// Two ranks in two Linux network namespaces joined by a veth pair: rendezvous and messages go
// over the 10.200.x.0/24 addresses inside those namespaces (no loopback shortcut, and no
// traffic to any other host). Needs root and iproute2; skipped with a message otherwise.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/support/multiprocess.h"
#include "tests/support/netns.h"
#include "transport/rendezvous.h"
#include "transport/transport.h"

namespace {

using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::enter_netns;
using ringgrad::test::NetnsPair;
using ringgrad::test::RunOptions;
using ringgrad::test::run_ranks;
using ringgrad::transport::Config;
using ringgrad::transport::Transport;

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
  options.setup = [&](int rank) { enter_netns(netns.name(rank == 0 ? 'a' : 'b')); };  // before any socket exists
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
