// The collective cases: build each rank's inputs, run the call, compare with the reference.
#include "tests/collectives/cases.h"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/reference.h"
#include "tests/support/multiprocess.h"

namespace ringgrad::test {
namespace {

using collectives::Algo;
using collectives::Buffer;
using collectives::CollKind;
using collectives::Communicator;
using collectives::ConstBuffer;
using collectives::DType;
using collectives::ReduceOp;
using namespace collectives::reference;  // inputs and serial results to compare with

constexpr std::size_t kCounts[] = {0, 1, 7, 1000003};
constexpr std::byte kGarbage{0xAB};

struct Case {
  CollKind kind;
  Algo algo;
  DType dtype;
  ReduceOp op;
  std::size_t count;  // NCCL's count: per rank for all_gather, gather (send), reduce_scatter, scatter
                      // (recv) and all_to_all (per peer)
  bool in_place;
  int root;
  std::string name() const {
    return fmt::format("{} algo={} dtype={} op={} count={} {} root={}", collectives::coll_name(kind),
                       collectives::algo_name(algo), collectives::dtype_name(dtype), collectives::reduce_op_name(op),
                       count, in_place ? "in-place" : "out-of-place", root);
  }
};

void expect_equal(const Case& c, const std::vector<std::byte>& got, const std::vector<std::byte>& want, int rank,
                  std::size_t offset = 0) {
  const std::size_t n = want.size() / collectives::dtype_size(c.dtype);
  const long i = first_difference(got.data() + offset, want.data(), n, c.dtype);
  check(i < 0, fmt::format("rank {}: {}: element {} differs from the serial reference", rank, c.name(), i));
}

void run_case(Communicator& comm, const Case& c) {
  const int p = comm.world_size(), r = comm.rank();
  const std::size_t es = collectives::dtype_size(c.dtype), n = c.count;
  auto buf = [&](std::vector<std::byte>& v, std::size_t offset, std::size_t count) {
    return Buffer{v.data() + offset * es, count, c.dtype};
  };
  switch (c.kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduce: {
      std::vector<std::byte> in = make_input(r, n, c.op, c.dtype), out(in.size(), kGarbage);
      const std::vector<std::byte> original = in;
      std::vector<std::byte>& result = c.in_place ? in : out;
      if (c.kind == CollKind::kAllReduce) comm.all_reduce(buf(in, 0, n), buf(result, 0, n), c.op, c.algo);
      else comm.reduce(buf(in, 0, n), buf(result, 0, n), c.op, c.root, c.algo);
      if (c.kind == CollKind::kAllReduce || r == c.root) expect_equal(c, result, expected_reduction(p, 0, n, c.op, c.dtype), r);
      if (!c.in_place) expect_equal(c, in, original, r);  // the input is left alone
      break;
    }
    case CollKind::kBroadcast: {
      const std::vector<std::byte> want = make_input(c.root, n, c.op, c.dtype);
      std::vector<std::byte> in = r == c.root ? want : std::vector<std::byte>{}, out(want.size(), kGarbage);
      if (c.in_place && r == c.root) out = want;
      comm.broadcast(ConstBuffer{c.in_place ? out.data() : in.data(), r == c.root ? n : 0, c.dtype}, buf(out, 0, n),
                     c.root, c.algo);
      expect_equal(c, out, want, r);
      break;
    }
    case CollKind::kAllGather: {
      const std::vector<std::byte> want = expected_output(c.kind, p, r, n, c.op, c.dtype, c.root);
      std::vector<std::byte> in = make_input(r, n, c.op, c.dtype, static_cast<std::size_t>(r) * n),
                             out(want.size(), kGarbage);
      if (c.in_place) std::copy(in.begin(), in.end(), out.begin() + static_cast<long>(static_cast<std::size_t>(r) * n * es));
      comm.all_gather(c.in_place ? buf(out, static_cast<std::size_t>(r) * n, n) : buf(in, 0, n), buf(out, 0, n * static_cast<std::size_t>(p)), c.algo);
      expect_equal(c, out, want, r);
      break;
    }
    case CollKind::kReduceScatter: {
      const std::size_t total = n * static_cast<std::size_t>(p), mine = static_cast<std::size_t>(r) * n;
      std::vector<std::byte> in = make_input(r, total, c.op, c.dtype), out(n * es, kGarbage);
      comm.reduce_scatter(buf(in, 0, total), c.in_place ? buf(in, mine, n) : buf(out, 0, n), c.op, c.algo);
      expect_equal(c, c.in_place ? in : out, expected_reduction(p, mine, n, c.op, c.dtype), r, c.in_place ? mine * es : 0);
      break;
    }
    case CollKind::kGather: {
      const std::size_t mine = static_cast<std::size_t>(r) * n;
      std::vector<std::byte> in = make_input(r, n, c.op, c.dtype, mine), out(n * static_cast<std::size_t>(p) * es, kGarbage);
      if (c.in_place && r == c.root) std::copy(in.begin(), in.end(), out.begin() + static_cast<long>(mine * es));
      comm.gather(c.in_place && r == c.root ? buf(out, mine, n) : buf(in, 0, n), buf(out, 0, n * static_cast<std::size_t>(p)),
                  c.root, c.algo);
      if (r == c.root) expect_equal(c, out, expected_output(c.kind, p, r, n, c.op, c.dtype, c.root), r);
      break;
    }
    case CollKind::kScatter: {
      const std::size_t total = n * static_cast<std::size_t>(p), mine = static_cast<std::size_t>(r) * n;
      std::vector<std::byte> in = r == c.root ? make_input(r, total, c.op, c.dtype) : std::vector<std::byte>{},
                             out(n * es, kGarbage);
      const bool in_place = c.in_place && r == c.root;
      comm.scatter(ConstBuffer{in.data(), in.size() / es, c.dtype}, in_place ? buf(in, mine, n) : buf(out, 0, n), c.root,
                   c.algo);
      expect_equal(c, in_place ? in : out, expected_output(c.kind, p, r, n, c.op, c.dtype, c.root), r, in_place ? mine * es : 0);
      break;
    }
    case CollKind::kAllToAll: {
      const std::size_t total = n * static_cast<std::size_t>(p);
      std::vector<std::byte> in = make_input(r, total, c.op, c.dtype), out(total * es, kGarbage);
      comm.all_to_all(buf(in, 0, total), c.in_place ? buf(in, 0, total) : buf(out, 0, total), c.algo);
      expect_equal(c, c.in_place ? in : out, expected_output(c.kind, p, r, n, c.op, c.dtype, c.root), r);
      break;
    }
    default: break;
  }
}

// Elements rank `from` sends rank `to` in run_all_to_all_v: 0 for some pairs, up to 3 x scale.
std::size_t v_count(int from, int to, std::size_t scale) { return static_cast<std::size_t>((from * 7 + to * 3) % 4) * scale; }

// A sweep allocates and frees buffers of up to 8 MB thousands of times. Left to its defaults,
// glibc maps each afresh and hands it back on free, so every case faults its pages in again:
// an all_reduce sweep on 2 ranks spent 5/6 of its 16 s there. Kept in the heap, it takes 2.5 s.
// Process-wide, so it is set only in the processes that run cases.
void keep_freed_buffers() {
  static const bool kept = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  check(kept, "mallopt refused to keep freed buffers");
}

}  // namespace

void run_all_to_all_v(Communicator& comm, DType dtype, std::size_t scale) {
  const int p = comm.world_size(), r = comm.rank();
  const std::size_t es = dtype_size(dtype);
  std::vector<std::size_t> send_counts, recv_counts;
  for (int q = 0; q < p; ++q) {
    send_counts.push_back(v_count(r, q, scale));
    recv_counts.push_back(v_count(q, r, scale));
  }
  // Rank q's send is make_input(q, ...) of its whole length; the block for rank r starts at
  // the sum of q's counts to ranks below r.
  std::size_t send_total = 0, recv_total = 0;
  for (int q = 0; q < p; ++q) send_total += send_counts[static_cast<std::size_t>(q)], recv_total += recv_counts[static_cast<std::size_t>(q)];
  std::vector<std::byte> in = make_input(r, send_total, ReduceOp::SUM, dtype), out(recv_total * es, std::byte{0xAB});
  comm.all_to_all_v(Buffer{in.data(), send_total, dtype}, send_counts, Buffer{out.data(), recv_total, dtype}, recv_counts);
  std::vector<std::byte> want;
  for (int q = 0; q < p; ++q) {
    std::size_t first = 0;
    for (int t = 0; t < r; ++t) first += v_count(q, t, scale);
    const auto part = make_input(q, v_count(q, r, scale), ReduceOp::SUM, dtype, first);
    want.insert(want.end(), part.begin(), part.end());
  }
  const long i = first_difference(out.data(), want.data(), recv_total, dtype);
  check(i < 0, fmt::format("rank {}: all_to_all_v {} scale {}: element {} differs from the serial reference", r,
                           dtype_name(dtype), scale, i));
}

void run_cases(Communicator& comm, CollKind kind, std::span<const Algo> algos, bool half_precision_reductions) {
  keep_freed_buffers();
  const int p = comm.world_size();
  const bool reduces = kind == CollKind::kAllReduce || kind == CollKind::kReduce || kind == CollKind::kReduceScatter;
  const bool per_rank = kind != CollKind::kAllReduce && kind != CollKind::kReduce && kind != CollKind::kBroadcast;
  int index = 0;
  for (Algo algo : algos) {
    if (algo != Algo::kAuto && !collectives::has_algo(kind, algo)) continue;
    for (DType dtype : collectives::kAllDTypes)
      for (ReduceOp op : collectives::kAllReduceOps) {
        if (!reduces && op != ReduceOp::SUM) continue;
        const bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
        if (reduces && half && !half_precision_reductions) continue;
        for (std::size_t count : kCounts)
          for (bool in_place : {false, true}) {
            // The large case keeps a per-rank count's whole buffer near 1000003 elements.
            const std::size_t n = per_rank && count > 7 ? count / static_cast<std::size_t>(p) : count;
            run_case(comm, Case{kind, algo, dtype, op, n, in_place, index++ % p});
          }
      }
  }
}

}  // namespace ringgrad::test
