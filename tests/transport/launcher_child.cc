// A small ringgrad program for the launcher tests: joins the job from the environment that
// ringgrad-run sets, passes each rank's id once around the ring, and prints what it got.

#include <cstdint>
#include <cstdio>
#include <span>

#include "transport/transport.h"

int main() {
  using ringgrad::transport::Transport;
  Transport t(ringgrad::transport::Config::from_env());
  const int p = t.world_size(), next = (t.rank() + 1) % p, prev = (t.rank() + p - 1) % p;
  int64_t out = t.rank() * 1000, in = -1;
  auto request = t.isend(next, std::as_bytes(std::span(&out, 1)), 0);
  t.recv(prev, std::as_writable_bytes(std::span(&in, 1)), 0);
  request.wait();
  std::printf("got %lld from rank %d\n", static_cast<long long>(in), prev);
  return in == prev * 1000 ? 0 : 1;
}
