// A small ringgrad program for the launcher tests: joins the job from the environment that
// ringgrad-run sets, passes each rank's id once around the ring, and prints what it got.
// With RINGGRAD_TEST_INTRUDE set, the last rank first plays a stranger on this host
// (intruder.h): once every other rank listens, it prints the addresses the ranks listen on,
// then knocks on the store and on rank 0 and prints where each knock came from.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "tests/transport/intruder.h"
#include "transport/rendezvous.h"
#include "transport/transport.h"

int main() {
  using namespace ringgrad::transport;
  const Config config = Config::from_env();
  std::vector<net::Fd> silent;  // the stranger's silent connections, open until the end
  if (std::getenv("RINGGRAD_TEST_INTRUDE") != nullptr && config.rank == config.world_size - 1) {
    Store store(config.master_addr, config.master_port, config.job_id, config.job_token, config.rank, config.timeout);
    std::vector<std::string> listening;
    for (int r = 0; r < config.rank; ++r) listening.push_back(address_key(r));
    store.wait(listening);
    for (const auto& l : ringgrad::test::listeners_of(ringgrad::test::siblings()))
      std::printf("listening on %s%s\n", l.address.c_str(), l.loopback ? "" : " (not loopback)");
    for (const std::string& from : ringgrad::test::knock_on_the_job(config, store, silent))
      std::printf("knocked from %s\n", from.c_str());
  }
  Transport t(config);
  const int p = t.world_size(), next = (t.rank() + 1) % p, prev = (t.rank() + p - 1) % p;
  int64_t out = t.rank() * 1000, in = -1;
  auto request = t.isend(next, std::as_bytes(std::span(&out, 1)), 0);
  t.recv(prev, std::as_writable_bytes(std::span(&in, 1)), 0);
  request.wait();
  std::printf("got %lld from rank %d\n", static_cast<long long>(in), prev);
  return in == prev * 1000 ? 0 : 1;
}
