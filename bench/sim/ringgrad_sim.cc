// ringgrad-sim: one collective on p simulated ranks in this one process (collectives/sim/), each
// algorithm's time on a simulated network beside the cost model's closed form for it, in
// nccl-tests' columns. p and the network come from --topology; sizes only by default (nothing is
// stored or reduced, so 4,096 ranks and gigabytes fit), real buffers checked against the serial
// reference with --payload. With --gpt, one training step of the contest's GPT under each
// layout named (gpt_step.h) instead.
//
//   ringgrad-sim -c all_reduce -a ring,tree,hd,hier --topology hosts=4x8,intra=nvlink5,inter=ib800 -b 8 -e 1G
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/sim/gpt_step.h"
#include "cli/numbers.h"
#include "cli/parse.h"
#include "collectives/sim/chrome_trace.h"
#include "collectives/sim/simulate.h"

namespace {

using namespace ringgrad::collectives;
using namespace ringgrad::collectives::sim;

struct Options {
  std::string collective = "all_reduce", algos = "ring,tree,hd", topology = "hosts=1x2,intra=shm";
  std::string min_bytes = "8", max_bytes = "64M", dtype = "float", op = "sum", fibers, trace, json, gpt;
  int step_factor = 4, root = 0;
  std::string chunk;  // empty: the topology's (Topology::chunk_bytes)
  bool payload = false;
  double tflops = 0;
};

CollKind parse_kind(const std::string& name) {
  for (std::size_t k = 0; k < kCollKinds; ++k)
    if (name == coll_name(static_cast<CollKind>(k))) return static_cast<CollKind>(k);
  throw std::invalid_argument(
      fmt::format("-c {}: not a collective (all_reduce, all_gather, reduce_scatter, broadcast, "
                  "reduce, gather, scatter, all_to_all, barrier)",
                  name));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(s.substr(start, comma - start));
  out.push_back(s.substr(start));
  return out;
}

bool per_rank_blocks(CollKind k) {
  return k == CollKind::kAllGather || k == CollKind::kReduceScatter || k == CollKind::kGather || k == CollKind::kScatter ||
         k == CollKind::kAllToAll;
}

// nccl-tests' busbw factor (PERFORMANCE.md).
double bus_factor(CollKind k, int p) {
  if (k == CollKind::kAllReduce) return 2.0 * (p - 1) / p;
  return per_rank_blocks(k) ? static_cast<double>(p - 1) / p : 1.0;
}

int run_table(const Options& o) {
  const CollKind kind = parse_kind(o.collective);
  const Topology topology = Topology::parse(o.topology);
  const DType dtype = parse_dtype(o.dtype);
  const ReduceOp op = parse_reduce_op(o.op);
  const std::size_t min_b = ringgrad::cli::parse_bytes(o.min_bytes), max_b = ringgrad::cli::parse_bytes(o.max_bytes);
  if (min_b > max_b) throw std::invalid_argument(fmt::format("-b {} is larger than -e {}", o.min_bytes, o.max_bytes));
  const int p = topology.world_size();
  const std::size_t chunk = o.chunk.empty() ? topology.chunk_bytes() : ringgrad::cli::parse_bytes(o.chunk);
  if (chunk < 8) throw std::invalid_argument(fmt::format("--chunk {}: need 8 bytes or more", o.chunk));
  const CostModel model = topology.cost_model(chunk);
  std::vector<Algo> algos;
  for (const std::string& name : split(o.algos)) {
    const Algo a = parse_algo(name);
    if (a != Algo::kAuto && !has_algo(kind, a))
      throw std::invalid_argument(fmt::format("{} has no '{}' algorithm", o.collective, name));
    algos.push_back(a);
  }
  ChromeTrace trace;
  WorldOptions options;
  options.payload = o.payload;
  options.chunk_bytes = chunk;
  if (!o.fibers.empty()) options.fibers = parse_fiber_switch(o.fibers.c_str());
  if (!o.trace.empty()) options.observer = trace.observer();
  World world(topology, options);

  fmt::print("# ringgrad-sim {}: {} simulated ranks, {}\n", o.collective, p,
             o.payload ? "payload (results checked)" : "sizes only");
  fmt::print("# topology: {}\n", topology.describe());
  fmt::print("# cost model: {}\n#\n", model.describe());
  fmt::print("# {:>10} {:>12} {:>8} {:>6} {:>5} {:>10} {:>8} {:>8} {:>6} {:>10} {:>9}  {:<10} {:>7}\n", "size", "count", "type",
             "redop", "root", "time", "algbw", "busbw", "#wrong", "model", "sim/model", "algo", "wall");
  fmt::print("# {:>10} {:>12} {:>8} {:>6} {:>5} {:>10} {:>8} {:>8} {:>6} {:>10} {:>9}  {:<10} {:>7}\n", "(B)", "(elements)", "",
             "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "", "", "(s)");
  nlohmann::json rows = nlohmann::json::array();
  long wrong_total = 0;
  const std::size_t es = dtype_size(dtype), unit = per_rank_blocks(kind) ? static_cast<std::size_t>(p) : 1;
  for (std::size_t size = min_b;; size *= static_cast<std::size_t>(o.step_factor)) {
    // Whole elements, a whole number per rank where ranks hold blocks (as the *_perf tools).
    std::size_t n = size / es / unit * unit;
    if (size > 0 && n == 0) n = unit;
    const std::size_t bytes = n * es;
    for (Algo asked : algos) {
      const Algo algo = asked == Algo::kAuto ? model.choose(kind, bytes, p, topology.hosts) : asked;
      const std::string name = asked == Algo::kAuto ? fmt::format("auto:{}", algo_name(algo)) : std::string(algo_name(algo));
      if (!o.trace.empty()) trace.begin_run(fmt::format("{} {} {} B", o.collective, name, bytes));
      const auto t0 = std::chrono::steady_clock::now();
      const CallResult r = simulate(world, Call{kind, algo, n / unit, dtype, op, o.root, false});
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double model_s = model.predict(kind, algo, bytes, p, topology.hosts);
      const double algbw = r.seconds > 0 ? static_cast<double>(bytes) / r.seconds / 1e9 : 0;
      if (r.wrong > 0) wrong_total += r.wrong;
      fmt::print("  {:>10} {:>12} {:>8} {:>6} {:>5} {:>10.2f} {:>8.2f} {:>8.2f} {:>6} {:>10.2f} {:>9.3f}  {:<10} {:>7.2f}\n",
                 bytes, n, dtype_name(dtype), has_op(kind) ? reduce_op_name(op) : "none", has_root(kind) ? o.root : -1,
                 r.seconds * 1e6, algbw, algbw * bus_factor(kind, p), r.wrong < 0 ? std::string("N/A") : std::to_string(r.wrong),
                 model_s * 1e6, model_s > 0 ? r.seconds / model_s : 0.0, name, wall);
      std::fflush(stdout);
      rows.push_back({{"size", bytes},
                      {"count", n},
                      {"algo", name},
                      {"time_us", r.seconds * 1e6},
                      {"model_us", model_s * 1e6},
                      {"algbw", algbw},
                      {"busbw", algbw * bus_factor(kind, p)},
                      {"wrong", r.wrong},
                      {"wall_s", wall}});
    }
    if (size >= max_b || size == 0 || size * static_cast<std::size_t>(o.step_factor) > max_b) break;
  }
  fmt::print("# Out of bounds values : {} {}\n#\n", o.payload ? std::to_string(wrong_total) : "N/A",
             wrong_total == 0 ? "OK" : "FAILED");
  if (!o.trace.empty()) {
    trace.write(o.trace);
    fmt::print("# trace: {}{}\n", o.trace,
               trace.dropped() ? fmt::format(" ({} spans past the first million left out)", trace.dropped()) : "");
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << nlohmann::json{{"collective", o.collective},
                          {"nranks", p},
                          {"topology", topology.describe()},
                          {"payload", o.payload},
                          {"rows", rows}}
               .dump(1)
        << "\n";
    if (!out) throw std::runtime_error(fmt::format("--json {}: writing it failed", o.json));
  }
  return wrong_total == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ringgrad-sim: ringgrad's collective algorithms on simulated ranks, beside the cost model"};
  app.add_option("-c,--collective", o.collective,
                 "all_reduce, all_gather, reduce_scatter, broadcast, reduce, gather, "
                 "scatter, all_to_all")
      ->capture_default_str();
  app.add_option("-a,--algo", o.algos,
                 "ring, tree, hd, hier, oneshot, linear, pairwise, bruck, auto (the cost model's "
                 "pick), or a comma list")
      ->capture_default_str();
  app.add_option("--topology", o.topology,
                 "hosts=HxL,intra=shm|tcp|nvlink4|nvlink5,inter=tcp|tcp1g|ib400|ib800"
                 "[,nic=rank|host][,uplink=GBPS], or a .json file (docs/sim.md)")
      ->capture_default_str();
  app.add_option("-b,--minbytes", o.min_bytes, "smallest size (K, M, G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.max_bytes, "largest size, up to 1T")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this each row")
      ->check(ringgrad::cli::between(2, 1 << 20))
      ->capture_default_str();
  app.add_option("-d,--datatype", o.dtype, "float, double, half, bfloat16, int32, int64, uint8")->capture_default_str();
  app.add_option("-o,--op", o.op, "sum, prod, min, max, avg")->capture_default_str();
  app.add_option("-r,--root", o.root, "root of broadcast, reduce, gather, scatter")
      ->check(ringgrad::cli::at_least(0))
      ->capture_default_str();
  app.add_option("--chunk", o.chunk,
                 "Link::chunk_bytes, the pieces and segments (K, M suffixes; default: 4M on GPUs, 128K in host memory)");
  app.add_flag("--payload", o.payload, "real buffers, results checked against the serial reference (#wrong)");
  app.add_option("--fibers", o.fibers, "how simulated ranks switch: ucontext or assembly (default: assembly on x86-64)");
  app.add_option("--trace", o.trace, "Chrome trace events of every simulated rank to this file");
  app.add_option("--json", o.json, "also write the rows to this JSON file");
  app.add_option("--gpt", o.gpt, "instead: one training step of the contest GPT per layout, as 'dp=32;dp=8,tp=4;dp=4,pp=8,m=32'");
  app.add_option("--tflops", o.tflops, "--gpt: each GPU's achieved TFLOP/s (default 900: 40% of B200's dense bf16)")
      ->check(ringgrad::cli::kPositive);
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  try {
    if (!o.gpt.empty()) return ringgrad::bench::run_gpt_steps(o.gpt, o.topology, o.tflops, o.trace);
    if (o.root >= Topology::parse(o.topology).world_size())
      throw std::invalid_argument(
          fmt::format("-r {}: the topology has {} ranks", o.root, Topology::parse(o.topology).world_size()));
    return run_table(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringgrad-sim: %s\n", e.what());
    return 2;
  }
}
