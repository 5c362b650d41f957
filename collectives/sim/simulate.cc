// simulate(): each rank's buffers laid out as the *_perf tools lay them (in place as NCCL
// defines it), the call on every rank, and the comparison with the serial reference.
#include "collectives/sim/simulate.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "collectives/algorithms/algorithms.h"
#include "collectives/reference.h"
#include "collectives/sim/sim_link.h"

namespace ringgrad::collectives::sim {
namespace {

bool gathers(CollKind k) { return k == CollKind::kAllGather || k == CollKind::kGather; }
bool scatters(CollKind k) { return k == CollKind::kReduceScatter || k == CollKind::kScatter; }
bool has_any_algo(CollKind k) {
  return std::any_of(std::begin(kAllAlgos), std::end(kAllAlgos), [k](Algo a) { return has_algo(k, a); });
}

// Elements of rank r's send and receive buffers.
struct Shape {
  std::size_t send, recv;
};
Shape shape(const Call& c, int p, int r) {
  const std::size_t n = c.count, P = static_cast<std::size_t>(p);
  if (gathers(c.kind)) return {n, n * P};
  if (scatters(c.kind)) return {n * P, n};
  if (c.kind == CollKind::kAllToAll) return {n * P, n * P};
  if (c.kind == CollKind::kBarrier) return {0, 0};
  if (c.kind == CollKind::kAllToAllV) {
    Shape s{0, 0};
    for (int q = 0; q < p; ++q) s.send += all_to_all_v_count(r, q, n), s.recv += all_to_all_v_count(q, r, n);
    return s;
  }
  return {n, n};
}

// Rank r's input: the reference's values, a gather's block at its place among the ranks'.
std::vector<std::byte> input(const Call& c, int p, int r) {
  const std::size_t first = gathers(c.kind) ? static_cast<std::size_t>(r) * c.count : 0;
  return reference::make_input(r, shape(c, p, r).send, c.op, c.dtype, first);
}

// What rank r should hold afterwards; empty where nothing is checked (a barrier, a reduce's or
// gather's non-roots, a sending rank of send/recv).
std::vector<std::byte> expected(const Call& c, int p, int r) {
  switch (c.kind) {
    case CollKind::kBarrier:
      return {};
    case CollKind::kReduce:
    case CollKind::kGather:
      if (r != c.root) return {};
      break;
    case CollKind::kSend:
    case CollKind::kRecv:
      if (r % 2 == 0) return {};
      return reference::make_input(r - 1, c.count, c.op, c.dtype);
    case CollKind::kAllToAllV: {
      std::vector<std::byte> all;
      for (int f = 0; f < p; ++f) {  // block f: what rank f sent r, its elements after those for ranks < r
        std::size_t offset = 0;
        for (int t = 0; t < r; ++t) offset += all_to_all_v_count(f, t, c.count);
        const auto part = reference::make_input(f, all_to_all_v_count(f, r, c.count), c.op, c.dtype, offset);
        all.insert(all.end(), part.begin(), part.end());
      }
      return all;
    }
    default:
      break;
  }
  return reference::expected_output(c.kind, p, r, c.count, c.op, c.dtype, c.root);
}

// The call on one rank; send and recv laid out by shape().
void run_call(SimLink& link, const Call& c, const std::byte* send, std::byte* recv, const HostLayout& hosts) {
  const int p = link.world_size(), r = link.rank();
  const CollArgs args{send, recv, c.count, c.dtype, c.op, c.root};
  switch (c.kind) {
    case CollKind::kBatchSendRecv: {
      const P2POp ops[] = {P2POp::recv(Buffer{recv, c.count, c.dtype}, (r + p - 1) % p),
                           P2POp::send(ConstBuffer{send, c.count, c.dtype}, (r + 1) % p)};
      return irecv_isend_waitall(link, ops);
    }
    case CollKind::kAllToAllV: {
      std::vector<std::size_t> sends, recvs;
      for (int q = 0; q < p; ++q)
        sends.push_back(all_to_all_v_count(r, q, c.count)), recvs.push_back(all_to_all_v_count(q, r, c.count));
      return pairwise_all_to_all_v(link, args, sends, recvs);
    }
    case CollKind::kSend:
    case CollKind::kRecv:
      if (r % 2 == 0 && r + 1 < p) link.send(r + 1, send, c.count * dtype_size(c.dtype));
      if (r % 2 == 1) link.recv(r - 1, recv, c.count * dtype_size(c.dtype));
      return;
    default:
      return run_collective(link, c.kind, c.algo, args, -1, hosts);
  }
}

}  // namespace

CallResult simulate(World& world, const Call& c) {
  if (has_any_algo(c.kind) && !has_algo(c.kind, c.algo))
    throw std::invalid_argument(fmt::format("{} has no '{}' algorithm", coll_name(c.kind), algo_name(c.algo)));
  const int p = world.size();
  const std::size_t es = dtype_size(c.dtype);
  const bool payload = world.options().payload;
  const bool in_place = c.in_place && c.kind != CollKind::kBatchSendRecv && c.kind != CollKind::kAllToAllV &&
                        c.kind != CollKind::kSend && c.kind != CollKind::kRecv;
  // Per rank: one buffer holding send and recv where in place, two otherwise.
  std::vector<std::vector<std::byte>> sends(payload ? static_cast<std::size_t>(p) : 0), recvs(sends.size());
  std::vector<std::byte*> send_at(static_cast<std::size_t>(p)), recv_at(send_at.size());
  for (int r = 0; r < p; ++r) {
    const auto R = static_cast<std::size_t>(r);
    const Shape s = shape(c, p, r);
    const std::size_t block = static_cast<std::size_t>(r) * c.count * es;
    if (!payload) {
      std::byte* base = world.unbacked(2 * std::max(s.send, s.recv) * es);
      send_at[R] = base + (in_place && gathers(c.kind) ? block : 0);
      recv_at[R] = in_place ? base + (scatters(c.kind) ? block : 0) : base + std::max(s.send, s.recv) * es;
      continue;
    }
    std::vector<std::byte> in = input(c, p, r);
    recvs[R].assign(std::max(s.recv, in_place ? s.send : 0) * es, std::byte{0xAB});
    if (!in_place) {
      sends[R] = std::move(in);
      send_at[R] = sends[R].data();
      recv_at[R] = recvs[R].data();
    } else if (gathers(c.kind)) {  // the input already at its place in the output
      std::copy(in.begin(), in.end(), recvs[R].begin() + static_cast<std::ptrdiff_t>(block));
      send_at[R] = recvs[R].data() + block;
      recv_at[R] = recvs[R].data();
    } else {  // the output where the input was (a scatter's: the rank's own block of it)
      std::copy(in.begin(), in.end(), recvs[R].begin());
      send_at[R] = recvs[R].data();
      recv_at[R] = recvs[R].data() + (scatters(c.kind) ? block : 0);
    }
  }
  const HostLayout hosts = world.topology().layout();
  CallResult result;
  result.seconds = world.run([&](SimLink& link) {
    const auto R = static_cast<std::size_t>(link.rank());
    run_call(link, c, send_at[R], recv_at[R], hosts);
  });
  if (!payload) return result;
  result.wrong = 0;
  std::vector<std::byte> want;
  for (int r = 0; r < p; ++r) {
    // all_reduce, broadcast and all_gather leave the same on every rank: computed once.
    const bool same_everywhere =
        c.kind == CollKind::kAllReduce || c.kind == CollKind::kBroadcast || c.kind == CollKind::kAllGather;
    if (r == 0 || !same_everywhere) want = expected(c, p, r);
    const std::byte* got = recv_at[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < want.size() / es; ++i) result.wrong += std::memcmp(got + i * es, want.data() + i * es, es) != 0;
  }
  return result;
}

}  // namespace ringgrad::collectives::sim
