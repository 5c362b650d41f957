// nccl-tests' sweep for one collective: sizes -b..-e by -f (or -i), each dtype (-d) and op (-o),
// each contender in turn (so A and B are measured interleaved), out of place then in place;
// time = mean of -n back-to-back calls after -w warm-up calls, the slowest rank's.
#include "bench/perf/perf_driver.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/perf/device_mirror.h"
#include "cli/numbers.h"
#include "cli/parse.h"
#include "cli/paths.h"
#include "collectives/cost_model.h"
#include "collectives/flight_recorder.h"
#include "collectives/backends/mpi_backend.h"
#include "collectives/reference.h"
#include "nn/parallel/timeline.h"
#if RINGGRAD_HAVE_NCCL
#include "collectives/backends/nccl_backend.h"
#endif

namespace ringgrad::bench {
namespace {

using collectives::Algo;
using collectives::Buffer;
using collectives::CollKind;
using collectives::Communicator;
using collectives::DType;
using collectives::ReduceOp;
namespace reference = collectives::reference;

struct Options {
  std::string min_bytes = "8", max_bytes = "64M", step_bytes;
  int step_factor = 2, iters = 20, warmup = 5, check = 1, root = 0, repeat = 1;
  int warmup_ms = 0;
  std::string op = "sum", dtype = "float", algo = "auto", json, device = "cpu", backend = "ringgrad";
  std::string trace = std::getenv("RINGGRAD_TRACE") ? std::getenv("RINGGRAD_TRACE") : "";
  bool calibrate = false;
};

// Step factors up to 2^20: a size (up to cli::kMaxBytes, 1 TiB) times the factor (under 2^60)
// cannot wrap.
constexpr int kMaxStepFactor = 1 << 20;

std::size_t parse_size(const std::string& s) { return cli::parse_bytes(s); }

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1) out.push_back(s.substr(start, comma - start));
  out.push_back(s.substr(start));
  return out;
}

// nccl-tests' name: the ring exchange of batched send/recv is its "sendrecv".
std::string perf_name(CollKind k) {
  return k == CollKind::kBatchSendRecv ? "sendrecv" : std::string(collectives::coll_name(k));
}

bool reduces(CollKind k) { return k == CollKind::kAllReduce || k == CollKind::kReduce || k == CollKind::kReduceScatter; }
bool rooted(CollKind k) {
  return k == CollKind::kBroadcast || k == CollKind::kReduce || k == CollKind::kGather || k == CollKind::kScatter;
}
// Each rank sends one block and receives p (all_gather, gather), or the reverse.
bool gathers(CollKind k) { return k == CollKind::kAllGather || k == CollKind::kGather; }
bool scatters(CollKind k) { return k == CollKind::kReduceScatter || k == CollKind::kScatter; }
// Each rank holds a block of the buffer, so a row holds a whole number of elements per rank.
bool blocked(CollKind k) { return gathers(k) || scatters(k) || k == CollKind::kAllToAll; }

// nccl-tests' busbw factors (PERFORMANCE.md): what a link must carry relative to algbw.
double bus_factor(CollKind k, int p) {
  if (k == CollKind::kAllReduce) return 2.0 * (p - 1) / p;
  if (gathers(k) || scatters(k) || k == CollKind::kAllToAll) return static_cast<double>(p - 1) / p;
  return 1.0;
}

// Where the input and output of a row live: per-rank blocks for the gathers and scatters.
struct Layout {
  std::size_t send_count, recv_count, inplace_send_offset, inplace_recv_offset;
};
Layout layout(CollKind k, std::size_t n, int p, int r) {
  const std::size_t c = n / static_cast<std::size_t>(p), off = static_cast<std::size_t>(r) * c;
  if (gathers(k)) return {c, n, off, 0};
  if (scatters(k)) return {n, c, 0, off};
  return {n, n, 0, 0};
}

std::vector<Contender> ringgrad_contenders(Communicator& comm, CollKind kind, const std::string& algos) {
  std::vector<Contender> out;
  for (const std::string& name : split(algos)) {
    const Algo algo = collectives::parse_algo(name);
    if (algo != Algo::kAuto && !collectives::has_algo(kind, algo))
      throw std::invalid_argument(fmt::format("{} has no '{}' algorithm", collectives::coll_name(kind), name));
    out.push_back({std::string(collectives::algo_name(algo)), [&comm, kind, algo](const OpSetup& s) -> std::function<void()> {
      const Layout l = layout(kind, s.count, comm.world_size(), comm.rank());
      const Buffer send{s.send, l.send_count, s.dtype, 1, s.device}, recv{s.recv, l.recv_count, s.dtype, 1, s.device};
      switch (kind) {
        case CollKind::kAllReduce: return [&comm, send, recv, s, algo] { comm.all_reduce(send, recv, s.op, algo); };
        case CollKind::kReduce: return [&comm, send, recv, s, algo] { comm.reduce(send, recv, s.op, s.root, algo); };
        case CollKind::kBroadcast: return [&comm, send, recv, s, algo] { comm.broadcast(send, recv, s.root, algo); };
        case CollKind::kAllGather: return [&comm, send, recv, algo] { comm.all_gather(send, recv, algo); };
        case CollKind::kGather: return [&comm, send, recv, s, algo] { comm.gather(send, recv, s.root, algo); };
        case CollKind::kScatter: return [&comm, send, recv, s, algo] { comm.scatter(send, recv, s.root, algo); };
        case CollKind::kAllToAll: return [&comm, send, recv, algo] { comm.all_to_all(send, recv, algo); };
        case CollKind::kBatchSendRecv: {  // a ring: send to the right while receiving from the left
          const int p = comm.world_size(), right = (comm.rank() + 1) % p, left = (comm.rank() + p - 1) % p;
          return [&comm, send, recv, right, left] {
            comm.batch_send_recv({collectives::P2POp::send(send, right), collectives::P2POp::recv(recv, left)});
          };
        }
        default: return [&comm, send, recv, s, algo] { comm.reduce_scatter(send, recv, s.op, algo); };
      }
    }, true, {}});
  }
  return out;
}

// A row's arguments for a library called directly (NCCL, MPI): NCCL's count convention.
[[maybe_unused]] collectives::CollArgs direct_args(CollKind kind, const OpSetup& s, int p, int r) {
  const Layout l = layout(kind, s.count, p, r);
  const std::size_t count = gathers(kind)                ? l.send_count
                            : kind == CollKind::kAllToAll ? l.recv_count / static_cast<std::size_t>(p)
                                                          : l.recv_count;
  return {static_cast<const std::byte*>(s.send), static_cast<std::byte*>(s.recv), count, s.dtype, s.op, s.root};
}

// NCCL beside ringgrad in one communicator's table (--backend both): its own NCCL communicator,
// set up through the job's store. Empty, with a note on rank 0, where NCCL cannot run.
std::vector<Contender> nccl_contenders(Communicator& comm, CollKind kind, int device) {
#if RINGGRAD_HAVE_NCCL
  try {
    auto nccl = std::make_shared<collectives::NcclBackend>(comm.store(), comm.rank(), comm.world_size(), device,
                                                           std::chrono::seconds(60), "bench/nccl");
    return {{"nccl", [&comm, kind, nccl](const OpSetup& s) -> std::function<void()> {
               const collectives::CollArgs args = direct_args(kind, s, comm.world_size(), comm.rank());
               return [nccl, kind, args] { nccl->run(kind, Algo::kAuto, args, -1, 0); };
             }, true, {}}};
  } catch (const collectives::CollectiveError& e) {
    if (comm.rank() == 0) fmt::print("# nccl left out: {}\n", e.what());
    return {};
  }
#else
  static_cast<void>(kind);
  static_cast<void>(device);
  if (comm.rank() == 0) fmt::print("# nccl left out: ringgrad was built without NCCL\n");
  return {};
#endif
}

// Open MPI (or any MPI) beside ringgrad in one table (--backend both on host memory): the same
// calls straight on MPI_COMM_WORLD, without ringgrad's argument check. Empty, with a note on
// rank 0, where MPI cannot run (no MPI build, or not started by mpirun).
std::vector<Contender> mpi_contenders(Communicator& comm, CollKind kind) {
#if RINGGRAD_HAVE_MPI
  try {
    auto mpi = std::make_shared<collectives::MpiBackend>(comm.rank(), comm.world_size());
    return {{"mpi", [&comm, kind, mpi](const OpSetup& s) -> std::function<void()> {
               const int p = comm.world_size(), r = comm.rank();
               const collectives::CollArgs args = direct_args(kind, s, p, r);
               if (kind == CollKind::kBatchSendRecv) {
                 const std::vector<collectives::P2POp> ops = {
                     collectives::P2POp::send(Buffer{s.send, s.count, s.dtype}, (r + 1) % p),
                     collectives::P2POp::recv(Buffer{s.recv, s.count, s.dtype}, (r + p - 1) % p)};
                 return [mpi, ops] { mpi->run_batch(ops, 0); };
               }
               return [mpi, kind, args] { mpi->run(kind, args, -1, 0); };
             }, true, [kind](DType dt) {  // MPI has no 16-bit float type to reduce
               return !reduces(kind) || (dt != DType::kFloat16 && dt != DType::kBFloat16);
             }}};
  } catch (const collectives::CollectiveError& e) {
    if (comm.rank() == 0) fmt::print("# mpi left out: {}\n", e.what());
    return {};
  }
#else
  static_cast<void>(kind);
  if (comm.rank() == 0) fmt::print("# mpi left out: ringgrad was built without MPI (libopenmpi-dev)\n");
  return {};
#endif
}

// After the counted warm-up, more untimed calls until `ms` milliseconds have passed on every
// rank. A CPU that sat idle can run slowly for its first milliseconds of work (on virtual machines
// 8-byte all-reduces have taken 1.4x their later time for the first 2-4 ms, for ringgrad and
// Open MPI alike), so a count of calls alone warms a fast call too briefly. Calls go
// in batches of 8; after each the ranks agree on the most time any still wants, so all make the
// same calls (`ms` is the same on every rank: run() takes the largest --warmup_ms).
void warm_for(Communicator& comm, const std::function<void()>& call, int ms) {
  const auto t0 = std::chrono::steady_clock::now();
  for (double wanted = ms; wanted > 0;) {
    for (int i = 0; i < 8; ++i) call();
    wanted = ms - std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    comm.all_reduce(Buffer{&wanted, 1, DType::kFloat64}, Buffer{&wanted, 1, DType::kFloat64}, ReduceOp::MAX);
  }
}

// The expected output of rank r (collectives/reference.h) for n elements, nccl-tests' size.
std::vector<std::byte> expected_output(CollKind k, int p, int r, std::size_t n, ReduceOp op, DType dt, int root) {
  const bool per_rank = gathers(k) || scatters(k) || k == CollKind::kAllToAll;
  return reference::expected_output(k, p, r, per_rank ? n / static_cast<std::size_t>(p) : n, op, dt, root);
}

// The cost model's time in us for a ringgrad contender's algorithm ("auto" as resolved); NaN
// for other libraries' contenders (nccl, gloo).
double predicted_us(const Communicator& comm, CollKind kind, const std::string& contender, std::size_t bytes) {
  for (Algo a : collectives::kAllAlgos) {
    if (contender != collectives::algo_name(a)) continue;
    const Algo chosen = comm.resolve(kind, a, bytes);
    if (chosen == Algo::kAuto) return std::nan("");  // barrier, send/recv: nothing modelled
    const collectives::HostLayout& h = comm.hosts();
    return comm.options().model.predict(kind, chosen, bytes, comm.world_size(), h.uniform() ? h.hosts() : 1) * 1e6;
  }
  return std::nan("");
}

// What the flags ask to time, parsed and checked before the ranks join (a typo should not
// wait for a rendezvous). Throws std::invalid_argument naming the flag.
struct Sweep {
  std::vector<DType> dtypes;
  std::vector<ReduceOp> ops;
  std::size_t min_b, max_b, step_b;
};

Sweep parse_sweep(CollKind kind, const Options& o) {
  Sweep w;
  for (const auto& d : split(o.dtype))
    if (d == "all") w.dtypes.assign(std::begin(collectives::kAllDTypes), std::end(collectives::kAllDTypes));
    else w.dtypes.push_back(collectives::parse_dtype(d));
  for (const auto& x : split(o.op))
    if (x == "all") w.ops.assign(std::begin(collectives::kAllReduceOps), std::end(collectives::kAllReduceOps));
    else w.ops.push_back(collectives::parse_reduce_op(x));
  if (!reduces(kind)) w.ops = {ReduceOp::SUM};
  w.min_b = parse_size(o.min_bytes);
  w.max_b = parse_size(o.max_bytes);
  w.step_b = o.step_bytes.empty() ? 0 : parse_size(o.step_bytes);
  if (w.min_b > w.max_b) throw std::invalid_argument(fmt::format("-b {} is larger than -e {}: no size to time", o.min_bytes, o.max_bytes));
  if (w.min_b == w.max_b) return w;  // one size: no step to check
  if (!o.step_bytes.empty() && w.step_b == 0)
    throw std::invalid_argument(fmt::format("-i {} would not grow the size from -b {} to -e {}: need -i of 1 byte or more",
                                            o.step_bytes, o.min_bytes, o.max_bytes));
  if (!w.step_b && (o.step_factor < 2 || o.step_factor > kMaxStepFactor))
    throw std::invalid_argument(fmt::format("-f {} cannot step the size from -b {} to -e {}: need -f between 2 and {} "
                                            "(the factor each step multiplies it by), or -i BYTES to add each step",
                                            o.step_factor, o.min_bytes, o.max_bytes, kMaxStepFactor));
  if (!w.step_b && w.min_b == 0)
    throw std::invalid_argument("-b 0 with -f: every size would stay 0; start at 1 byte or more, or step with -i");
  return w;
}

// The elements of a row of `size` bytes of `dt`: whole elements (a whole number per rank where
// ranks hold blocks), rounded down; a size under the smallest such row, but not 0, rounds up to it.
std::size_t row_count(CollKind kind, std::size_t size, DType dt, int p) {
  const std::size_t unit = blocked(kind) ? static_cast<std::size_t>(p) : 1;
  const std::size_t n = size / collectives::dtype_size(dt) / unit * unit;
  return size > 0 && n == 0 ? unit : n;
}

struct Measure {
  double time_us = 0;
  long wrong = 0;
  bool valid = false;
};

int run(CollKind kind, const Options& o, const Sweep& sweep, Communicator& comm, std::vector<Contender> contenders,
        int device) {
  const int p = comm.world_size(), r = comm.rank();
  if (kind == CollKind::kBatchSendRecv && p < 2)
    throw std::invalid_argument("sendrecv exchanges with the neighbouring ranks: run it on 2 ranks or more");
  const bool lead = r == 0;
  std::string model_line = fmt::format("defaults, --calibrate measures them: {}", comm.options().model.describe());
  if (o.calibrate) model_line = fmt::format("calibrated: {}", collectives::calibrate(comm).describe());
  const auto& [dtypes, ops, min_b, max_b, step_b] = sweep;
  // Every rank warms up as long as the longest --warmup_ms asks: each enters warm_for alike.
  int64_t warmup_ms = o.warmup_ms;
  comm.all_reduce(Buffer{&warmup_ms, 1, DType::kInt64}, Buffer{&warmup_ms, 1, DType::kInt64}, ReduceOp::MAX);

  if (lead) {
    fmt::print("# ringgrad {}_perf: nranks {}, iters {}, warmup {} and {} ms, repeat {}, check {}, argument check {}\n",
               perf_name(kind), p, o.iters, o.warmup, warmup_ms, o.repeat, o.check,
               comm.options().check_args ? "on (RINGGRAD_CHECK=0 turns it off)" : "off");
    fmt::print("# memory: {}, backend {}\n", device == collectives::kHost ? "host" : fmt::format("cuda:{} (rank 0)", device),
               o.backend);
    fmt::print("# cost model ({})\n", model_line);
    fmt::print("# model: its time for the row's algorithm; auto runs the lowest, one-shot up to {} KiB only\n#\n",
               collectives::kOneShotMaxBytes >> 10);
    fmt::print("# {:>94}{:>36}\n", "out-of-place", "in-place");
    fmt::print("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>8} {:>7} {:>7} {:>6} {:>8} {:>7} {:>7} {:>6} {:>8}  {}\n", "size",
               "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
               "model", "algo");
    fmt::print("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>8} {:>7} {:>7} {:>6} {:>8} {:>7} {:>7} {:>6} {:>8}\n", "(B)",
               "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)");
    std::fflush(stdout);
  }
  nlohmann::json rows = nlohmann::json::array();
  double busbw_sum = 0;
  long busbw_n = 0, wrong_total = 0;
  // The count of each dtype's last row: sizes that round to it again are not timed twice.
  std::vector<std::size_t> last_count(dtypes.size(), SIZE_MAX);
  for (std::size_t size = min_b; size <= max_b; size = step_b ? size + step_b : size * static_cast<std::size_t>(o.step_factor)) {
    for (std::size_t d = 0; d < dtypes.size(); ++d) {
      const DType dt = dtypes[d];
      const std::size_t n = row_count(kind, size, dt, p);
      if (n == last_count[d]) continue;
      last_count[d] = n;
      for (ReduceOp op : ops) {
        const std::size_t es = collectives::dtype_size(dt);
        const Layout l = layout(kind, n, p, r);
        std::vector<std::vector<Measure>> m(contenders.size(), std::vector<Measure>(2));
        for (int rep = 0; rep < o.repeat; ++rep)
          for (std::size_t ci = 0; ci < contenders.size(); ++ci)
            for (int place = 0; place < 2; ++place) {
              const bool in_place = place == 1;
              if (!in_place && !contenders[ci].out_of_place) continue;
              if (in_place && kind == CollKind::kBatchSendRecv) continue;  // the receive would overwrite the send
              if (contenders[ci].takes && !contenders[ci].takes(dt)) continue;
              std::vector<std::byte> input = reference::make_input(r, l.send_count, op, dt, gathers(kind) ? l.inplace_send_offset : 0);
              std::vector<std::byte> send, recv(std::max(l.recv_count, l.send_count) * es, std::byte{0});
              std::byte* send_ptr;
              std::byte* recv_ptr;
              if (!in_place) {
                send = input;
                send_ptr = send.data();
                recv_ptr = recv.data();
              } else if (gathers(kind)) {
                std::copy(input.begin(), input.end(), recv.begin() + static_cast<long>(l.inplace_send_offset * es));
                recv_ptr = recv.data();
                send_ptr = recv_ptr + l.inplace_send_offset * es;
              } else {
                std::copy(input.begin(), input.end(), recv.begin());
                send_ptr = recv.data();
                recv_ptr = send_ptr + l.inplace_recv_offset * es;
              }
              DeviceMirror send_dev(send, device), recv_dev(recv, device);
              auto on_device = [&](std::byte* ptr) {  // the same offset in the twin
                if (!send.empty() && ptr >= send.data() && ptr < send.data() + send.size()) return send_dev.data() + (ptr - send.data());
                return recv_dev.data() + (ptr - recv.data());
              };
              const OpSetup setup{on_device(send_ptr), on_device(recv_ptr), n, dt, op, o.root, device};
              std::function<void()> call = contenders[ci].prepare(setup);
              Measure& out = m[ci][static_cast<std::size_t>(place)];
              if (o.check && rep == 0) {
                call();
                recv_dev.to_host();
                const bool has_output = !((kind == CollKind::kReduce || kind == CollKind::kGather) && r != o.root);
                if (has_output) {
                  const auto want = expected_output(kind, p, r, n, op, dt, o.root);
                  const std::size_t cnt = want.size() / es;
                  for (std::size_t i = 0; i < cnt; ++i)
                    out.wrong += std::memcmp(recv_ptr + i * es, want.data() + i * es, es) != 0;
                }
                int64_t w = out.wrong;
                comm.all_reduce(Buffer{&w, 1, DType::kInt64}, Buffer{&w, 1, DType::kInt64}, ReduceOp::SUM);
                out.wrong = w;
              }
              for (int i = 0; i < o.warmup; ++i) call();
              warm_for(comm, call, static_cast<int>(warmup_ms));
              comm.barrier();
              const auto t0 = std::chrono::steady_clock::now();
              for (int i = 0; i < o.iters; ++i) call();
              double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.iters;
              comm.all_reduce(Buffer{&t, 1, DType::kFloat64}, Buffer{&t, 1, DType::kFloat64}, ReduceOp::MAX);
              // Best of the repeats: the least disturbed by other work on a shared machine.
              out.time_us = out.valid ? std::min(out.time_us, t * 1e6) : t * 1e6;
              out.valid = true;
            }
        for (std::size_t ci = 0; ci < contenders.size(); ++ci) {
          const std::size_t bytes = n * es;
          std::string algo = contenders[ci].name;
          if (const Algo chosen = comm.resolve(kind, Algo::kAuto, bytes); algo == "auto" && chosen != Algo::kAuto)
            algo += ":" + std::string(collectives::algo_name(chosen));
          nlohmann::json row = {{"collective", perf_name(kind)}, {"size", bytes}, {"count", n},
                                {"type", collectives::dtype_name(dt)}, {"redop", reduces(kind) ? collectives::reduce_op_name(op) : "none"},
                                {"root", rooted(kind) ? o.root : -1}, {"algo", algo}, {"nranks", p}};
          std::string cols;
          for (int place = 0; place < 2; ++place) {
            const Measure& x = m[ci][static_cast<std::size_t>(place)];
            if (!x.valid) {
              cols += fmt::format(" {:>8} {:>7} {:>7} {:>6}", "n/a", "n/a", "n/a", "n/a");
              continue;
            }
            const double algbw = static_cast<double>(bytes) / (x.time_us * 1e-6) / 1e9, busbw = algbw * bus_factor(kind, p);
            cols += fmt::format(" {:>8.1f} {:>7.2f} {:>7.2f} {:>6}", x.time_us, algbw, busbw, o.check ? std::to_string(x.wrong) : "N/A");
            row[place ? "in_place" : "out_of_place"] = {{"time_us", x.time_us}, {"algbw", algbw}, {"busbw", busbw}, {"wrong", x.wrong}};
            busbw_sum += busbw;
            ++busbw_n;
            wrong_total += x.wrong;
          }
          const double model_us = predicted_us(comm, kind, contenders[ci].name, bytes);
          if (!std::isnan(model_us)) row["predicted_us"] = model_us;
          rows.push_back(row);
          if (lead) {
            fmt::print("  {:>10} {:>12} {:>8} {:>6} {:>6}{} {:>8}  {}\n", bytes, n, collectives::dtype_name(dt),
                       reduces(kind) ? collectives::reduce_op_name(op) : "none", rooted(kind) ? o.root : -1, cols,
                       std::isnan(model_us) ? std::string("n/a") : fmt::format("{:.1f}", model_us), algo);
            std::fflush(stdout);
          }
        }
      }
    }
    if (size == max_b) break;  // with -b = -e, -f and -i are not checked: no step follows
  }
  const double avg = busbw_n ? busbw_sum / static_cast<double>(busbw_n) : 0.0;
  if (lead) {
    fmt::print("# Out of bounds values : {} {}\n", wrong_total, wrong_total == 0 ? "OK" : "FAILED");
    fmt::print("# Avg bus bandwidth    : {:.4f} \n", avg);
    if (device == collectives::kHost && p > 1)
      fmt::print("# Host path            : {}\n", kind == CollKind::kBatchSendRecv ? "TCP (send/recv always use TCP)" : comm.host_path());
    fmt::print("#\n");
    if (!o.json.empty()) {
      nlohmann::json doc = {{"collective", perf_name(kind)}, {"nranks", p}, {"iters", o.iters},
                            {"cost_model", model_line}, {"rows", rows}, {"avg_busbw", avg}, {"wrong", wrong_total}};
      if (device == collectives::kHost && p > 1)
        doc["host_path"] = kind == CollKind::kBatchSendRecv ? "TCP" : comm.host_path();
      std::ofstream json(o.json);
      if (!(json << doc.dump(1) << "\n" << std::flush)) {
        fmt::print(stderr, "{}_perf: --json {}: writing it failed\n", perf_name(kind), o.json);
        return 1;
      }
    }
  }
  return wrong_total == 0 ? 0 : 1;
}

}  // namespace

int run_perf(CollKind kind, int argc, char** argv, const std::function<std::vector<Contender>(Communicator&)>& extra) {
  Options o;
  CLI::App app{fmt::format("ringgrad {}_perf: nccl-tests-style sweep; run it under ringgrad-run", perf_name(kind))};
  app.add_option("-b,--minbytes", o.min_bytes, "smallest size in bytes (K, M, G suffixes). Rows hold whole elements of -d "
                 "(a whole number per rank for gathers, scatters, all_to_all): a size rounds down to them, one under a "
                 "row's worth (but not 0) up to one row, and one that rounds to the row before is skipped")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", o.max_bytes, "largest size in bytes, up to 1T")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this each step, 2 to 1048576")->capture_default_str();
  app.add_option("-i,--stepbytes", o.step_bytes, "add this (1 byte or more) to the size each step instead of -f");
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations first")->capture_default_str();
  app.add_option("--warmup_ms", o.warmup_ms, "then more untimed iterations, until this many milliseconds have passed "
                                             "(a CPU that was idle runs slowly at first)")
      ->check(ringgrad::cli::between(0, 60000))->capture_default_str();
  app.add_option("-c,--check", o.check, "check results against a serial reference: 0 or 1")
      ->check(ringgrad::cli::between(0, 1))->capture_default_str();
  app.add_option("-o,--op", o.op, "sum, prod, min, max, avg, all (or a comma list)")->capture_default_str();
  app.add_option("-d,--datatype", o.dtype, "float, double, half, bfloat16, int32, int64, uint8, all (or a list)")->capture_default_str();
  app.add_option("-r,--root", o.root, "root rank of broadcast, reduce, gather and scatter")->capture_default_str();
  app.add_option("-a,--algo", o.algo, "ring, tree, hd, hier, oneshot, linear, pairwise, bruck, auto, or a comma list timed side by side")
      ->capture_default_str();
  app.add_option("--repeat", o.repeat, "time every row this many times, interleaved; report the fastest")->capture_default_str();
  app.add_flag("--calibrate", o.calibrate, "measure the cost model's alpha, beta, gamma here first and print them");
  app.add_option("--json", o.json, "also write the rows to this JSON file");
  app.add_option("--trace", o.trace, "a timeline of every collective (Chrome trace-event JSON, and FILE.svg; "
                                     "default: RINGGRAD_TRACE)");
  app.add_option("--device", o.device, "cpu (host memory) or cuda (cuda:LOCAL_RANK % GPUs)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  app.add_option("--backend", o.backend, "ringgrad, nccl (--device cuda), mpi (--device cpu, under mpirun), or both: "
                                          "ringgrad beside nccl or mpi in one table")
      ->check(CLI::IsMember({"ringgrad", "nccl", "mpi", "both"}))->capture_default_str();
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  try {
    if (o.iters < 1 || o.warmup < 0 || o.repeat < 1)
      throw std::invalid_argument(fmt::format("-n {}, -w {}, --repeat {}: need -n >= 1, -w >= 0 and --repeat >= 1",
                                              o.iters, o.warmup, o.repeat));
    if (o.backend == "nccl" && o.device != "cuda")
      throw std::invalid_argument("--backend nccl times device buffers: add --device cuda");
    if (o.backend == "mpi" && o.device != "cpu")
      throw std::invalid_argument("--backend mpi times host buffers: --device cpu");
    if (extra && o.device == "cuda") throw std::invalid_argument("this tool's extra contenders time host memory only: --device cpu");
    const Sweep sweep = parse_sweep(kind, o);
    // A timeline keeps every collective of the sweep: the flight records must hold them all, or
    // as many as they can (the sweep's last collectives then).
    if (!o.trace.empty()) {
      ::setenv("RINGGRAD_FLIGHT_RECORDER_ENTRIES", std::to_string(collectives::kMaxFlightRecorderEntries).c_str(), 0);
    }
    const transport::Config config = transport::Config::from_env();
    // Rank 0 writes the rows and the timeline: a path it cannot write is found now, not after the
    // sweep (and an earlier file there stays as it is until the new one replaces it).
    if (!o.json.empty() && o.json == o.trace) {
      throw std::invalid_argument(fmt::format("--json and --trace both name {}: the timeline would replace the rows", o.json));
    }
    const std::string svg = o.trace.empty() ? "" : o.trace + ".svg";  // the timeline's picture, beside it
    for (const auto& [flag, path] : {std::pair{"--json", o.json}, std::pair{"--trace", o.trace}, std::pair{"--trace", svg}}) {
      if (config.rank != 0 || path.empty()) continue;
      if (const std::string why = cli::why_unwritable(path); !why.empty())
        throw std::invalid_argument(fmt::format("{} {}: {}", flag, path, why));
    }
    const int device = o.device == "cuda" ? pick_device(config.rank) : collectives::kHost;
    collectives::CommOptions options = collectives::CommOptions::from_env();
    const bool other = o.backend == "nccl" || o.backend == "mpi";  // the whole communicator on it
    if (other) options.backend = collectives::parse_backend(o.backend);
    Communicator comm(config, options);
    auto contenders = ringgrad_contenders(comm, kind, other ? "auto" : o.algo);
    if (other) contenders[0].name = o.backend;
    if (o.backend == "both") {
      auto more = device == collectives::kHost ? mpi_contenders(comm, kind) : nccl_contenders(comm, kind, device);
      contenders.insert(contenders.end(), more.begin(), more.end());
    }
    if (extra) {
      auto more = extra(comm);
      contenders.insert(contenders.end(), more.begin(), more.end());
    }
    nn::parallel::Timeline timeline(comm, {&comm});
    if (!o.trace.empty()) timeline.start();
    const int status = run(kind, o, sweep, comm, std::move(contenders), device);
    if (!o.trace.empty()) {
      const nn::parallel::TimelineSummary s = timeline.write(o.trace);
      if (comm.rank() == 0) fmt::print("# trace: {} and {}.svg ({} events)\n", o.trace, o.trace, s.events);
    }
    return status;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s_perf: out of memory for buffers of up to -e %s (each rank holds its send and recv, and "
                 "a reference copy)\n", perf_name(kind).c_str(), o.max_bytes.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s_perf: %s\n", perf_name(kind).c_str(), e.what());
    return 2;
  }
}

}  // namespace ringgrad::bench
