// One simulated training step: two streams per GPU (compute, and DDP's communication), the 1F1B
// schedule on the compute stream, the all-reduces by the algorithm files over GroupLinks.
#include "bench/sim/gpt_step.h"

#include <charconv>
#include <chrono>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "collectives/algorithms/algorithms.h"
#include "collectives/links/group_link.h"
#include "collectives/sim/sim_link.h"

namespace ringgrad::bench {
namespace {

using namespace collectives;
using namespace collectives::sim;

// Where device g sits in the dp x pp x cp x tp grid, tp fastest.
struct Grid {
  Layout l;
  int rank(int dp, int pp, int cp, int tp) const { return ((dp * l.pp + pp) * l.cp + cp) * l.tp + tp; }
  int tp_of(int g) const { return g % l.tp; }
  int cp_of(int g) const { return g / l.tp % l.cp; }
  int pp_of(int g) const { return g / (l.tp * l.cp) % l.pp; }
  int dp_of(int g) const { return g / (l.tp * l.cp * l.pp); }
  // g's group along dimension 'd', 'p', 'c' or 't', as ranks of stream `stream` (device + stream x devices).
  std::vector<int> group(int g, char dim, int stream) const {
    std::vector<int> out;
    const int n = dim == 'd' ? l.dp : dim == 'p' ? l.pp : dim == 'c' ? l.cp : l.tp;
    for (int i = 0; i < n; ++i)
      out.push_back(stream * l.dp * l.pp * l.cp * l.tp + rank(dim == 'd' ? i : dp_of(g), dim == 'p' ? i : pp_of(g),
                                                              dim == 'c' ? i : cp_of(g), dim == 't' ? i : tp_of(g)));
    return out;
  }
};

// 1F1B (PipeDream-Flush, Narayanan et al. 2021) for stage s of pp over m micro-batches: pp-s-1
// forwards to fill the pipe, then one forward and one backward in turn, then the backwards left.
std::vector<std::pair<bool, int>> one_f_one_b(int s, int pp, int m) {
  const int warmup = std::min(pp - s - 1, m);
  std::vector<std::pair<bool, int>> order;
  for (int i = 0; i < warmup; ++i) order.emplace_back(true, i);
  for (int i = 0; i < m - warmup; ++i) order.emplace_back(true, warmup + i), order.emplace_back(false, i);
  for (int i = m - warmup; i < m; ++i) order.emplace_back(false, i);
  return order;
}

// An all-reduce of `count` elements of `dtype` in place over `group`, by the algorithm the cost
// model predicts fastest (with the figures inside a host when the group is inside one).
void all_reduce(Link& group, const HostLayout& hosts, const CostModel& model, std::byte* data, std::size_t count, DType dtype) {
  CostModel m = model;
  if (hosts.hosts() == 1) m.alpha = m.alpha_local, m.beta = m.beta_local;
  const int h = hosts.uniform() ? hosts.hosts() : 1;
  const Algo algo = m.choose(CollKind::kAllReduce, count * dtype_size(dtype), group.world_size(), h);
  run_collective(group, CollKind::kAllReduce, algo, CollArgs{data, data, count, dtype, ReduceOp::SUM, 0}, -1, hosts);
}

struct RankTimes {
  double compute = 0, comm = 0, pipeline = 0;
};

}  // namespace

Layout parse_layout(std::string_view text) {
  Layout l;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start), key = item.substr(0, item.find('='));
    start = comma + 1;
    int v = 0;
    const std::string_view digits = item.substr(std::min(item.size(), key.size() + 1));
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || end != digits.data() + digits.size() || v < 1)
      throw std::invalid_argument(fmt::format("layout '{}': '{}' is not KEY=N with N >= 1", text, item));
    int* field = key == "dp"   ? &l.dp
                 : key == "tp" ? &l.tp
                 : key == "pp" ? &l.pp
                 : key == "cp" ? &l.cp
                 : key == "m"  ? &l.micro_batches
                               : nullptr;
    if (!field) throw std::invalid_argument(fmt::format("layout '{}': unknown '{}': expected dp, tp, pp, cp or m", text, key));
    *field = v;
  }
  return l;
}

StepTimes simulate_gpt_step(Topology topology, const GptShape& s, const Layout& asked, double flops, ChromeTrace* trace) {
  Layout l = asked;
  if (l.micro_batches == 0) l.micro_batches = l.pp > 1 ? 4 * l.pp : 1;
  const int G = l.dp * l.tp * l.pp * l.cp, m = l.micro_batches;
  if (G != topology.devices())
    throw std::invalid_argument(fmt::format("dp {} x tp {} x pp {} x cp {} = {} GPUs, the topology has {}", l.dp, l.tp, l.pp,
                                            l.cp, G, topology.devices()));
  if (s.batch % (l.dp * m) || s.n_layer < l.pp || s.n_embd % l.tp || s.block_size % l.cp)
    throw std::invalid_argument(
        fmt::format("batch {} by dp x m = {}, C {} by tp {}, T {} by cp {}: each must divide; and "
                    "{} layers for pp {} stages",
                    s.batch, l.dp * m, s.n_embd, l.tp, s.block_size, l.cp, s.n_layer, l.pp));
  topology.streams = 2;  // stream 1: DDP's
  WorldOptions options;
  options.payload = false;
  options.chunk_bytes = topology.chunk_bytes();
  if (trace) options.observer = trace->observer();
  World world(topology, options);
  const Grid grid{l};
  const CostModel model = topology.cost_model(options.chunk_bytes);
  const HostLayout hosts = topology.layout();
  const double C = s.n_embd, T = s.block_size, tokens = static_cast<double>(s.batch / l.dp / m) * T / l.cp;
  const double attention_s = tokens * (8 * C * C + 4 * T * C) / l.tp / flops, mlp_s = tokens * 16 * C * C / l.tp / flops;
  const double head_s = tokens * 2 * C * s.vocab / l.tp / flops;
  const auto act = static_cast<std::size_t>(tokens * C);            // elements, bf16
  const auto kv = static_cast<std::size_t>(2 * tokens * C / l.tp);  // K and V of this rank's heads
  const auto grads = static_cast<std::size_t>(12 * C * C / l.tp);   // one layer's, fp32
  // Stage k holds layers [n k / pp, n (k+1) / pp): 12 layers on 8 stages are 1, 2, 1, 2, ...
  auto layers_of = [&](int stage) { return s.n_layer * (stage + 1) / l.pp - s.n_layer * stage / l.pp; };
  std::byte* buf = world.unbacked(8 * (act + kv + grads) + 64);
  std::vector<RankTimes> times(static_cast<std::size_t>(G));

  auto compute_stream = [&](SimLink& link, int g) {
    RankTimes& t = times[static_cast<std::size_t>(g)];
    const int stage = grid.pp_of(g), layers = layers_of(stage);
    GroupLink tp_link(link, grid.group(g, 't', 0)), cp_link(link, grid.group(g, 'c', 0));
    const HostLayout tp_hosts = hosts.subset(grid.group(g, 't', 0));
    const int prev = stage > 0 ? grid.rank(grid.dp_of(g), stage - 1, grid.cp_of(g), grid.tp_of(g)) : -1;
    const int next = stage + 1 < l.pp ? grid.rank(grid.dp_of(g), stage + 1, grid.cp_of(g), grid.tp_of(g)) : -1;
    auto timed = [&](double& into, auto&& work) {
      const double t0 = link.clock();
      work();
      into += link.clock() - t0;
    };
    auto compute = [&](double seconds, const char* name) {
      link.compute(seconds, name);
      t.compute += seconds;
    };
    auto tp_all_reduce = [&] {
      if (l.tp > 1) timed(t.comm, [&] { all_reduce(tp_link, tp_hosts, model, buf, act, DType::kBFloat16); });
    };
    auto cp_ring = [&](std::size_t count) {  // cp-1 steps: a block to the next rank, one from the previous
      const int c = cp_link.rank();
      for (int k = 1; k < l.cp; ++k)
        timed(t.comm,
              [&] { cp_link.send_recv((c + 1) % l.cp, buf, count * 2, (c + l.cp - 1) % l.cp, buf + count * 2, count * 2); });
    };
    std::vector<Pending> sends;
    std::byte signal{};
    for (const auto& [forward, mb] : one_f_one_b(stage, l.pp, m)) {
      if (forward) {
        if (prev >= 0) timed(t.pipeline, [&] { link.recv(prev, buf, act * 2); });
        for (int layer = 0; layer < layers; ++layer) {
          cp_ring(kv);
          compute(attention_s, "forward attention");
          tp_all_reduce();
          compute(mlp_s, "forward mlp");
          tp_all_reduce();
        }
        if (next < 0)
          compute(head_s, "forward head");
        else
          link.isend(next, buf, act * 2, sends);
        continue;
      }
      if (next >= 0)
        timed(t.pipeline, [&] { link.recv(next, buf, act * 2); });
      else
        compute(2 * head_s, "backward head");
      for (int layer = 0; layer < layers; ++layer) {
        tp_all_reduce();
        compute(2 * mlp_s, "backward mlp");
        tp_all_reduce();
        compute(2 * attention_s, "backward attention");
        cp_ring(2 * kv);
        if (l.dp > 1 && mb == m - 1) link.send(G + g, &signal, 1);  // this layer's gradients are ready
      }
      if (prev >= 0) link.isend(prev, buf, act * 2, sends);
    }
    timed(t.pipeline, [&] { wait_all(sends); });
    if (l.dp > 1) timed(t.comm, [&] { link.recv(G + g, &signal, 1); });  // DDP's last bucket
  };

  auto ddp_stream = [&](SimLink& link, int g) {
    if (l.dp == 1) return;
    GroupLink dp_link(link, grid.group(g, 'd', 1));
    const HostLayout dp_hosts = hosts.subset(grid.group(g, 'd', 1));
    std::byte signal{};
    for (int layer = 0; layer < layers_of(grid.pp_of(g)); ++layer) {
      link.recv(g, &signal, 1);
      all_reduce(dp_link, dp_hosts, model, buf, grads, DType::kFloat32);
    }
    link.send(g, &signal, 1);
  };

  world.run([&](SimLink& link) {
    if (link.rank() < G)
      compute_stream(link, link.rank());
    else
      ddp_stream(link, link.rank() - G);
  });
  int last = 0;
  for (int g = 0; g < G; ++g)
    if (world.finish(g) > world.finish(last)) last = g;
  const RankTimes& t = times[static_cast<std::size_t>(last)];
  return StepTimes{world.finish(last), t.compute, t.comm, t.pipeline};
}

int run_gpt_steps(const std::string& layouts, const std::string& topology_spec, double tflops, const std::string& trace_path) {
  const Topology topology = Topology::parse(topology_spec);
  const GptShape shape;
  const double flops = (tflops > 0 ? tflops : 900) * 1e12;
  fmt::print("# one step of the contest GPT ({} layers, C {}, T {}, V {}, batch {} sequences) on {} simulated GPUs\n",
             shape.n_layer, shape.n_embd, shape.block_size, shape.vocab, shape.batch, topology.devices());
  fmt::print("# topology: {}\n", topology.describe());
  fmt::print("# compute at {:.0f} TFLOP/s per GPU{}; the optimizer step left out\n#\n", flops / 1e12,
             tflops > 0 ? "" : " (40% of B200's 2,250 dense bf16)");
  fmt::print("# {:<18} {:>4} {:>10} {:>10} {:>10} {:>10} {:>7} {:>8}\n", "layout", "m", "step", "compute", "comm", "pipeline",
             "comm", "wall");
  fmt::print("# {:<18} {:>4} {:>10} {:>10} {:>10} {:>10} {:>7} {:>8}\n", "", "", "(ms)", "(ms)", "(ms)", "(ms)", "share", "(s)");
  ChromeTrace trace;
  std::string best;
  double best_step = 0;
  std::size_t start = 0;
  while (start <= layouts.size()) {
    const std::size_t semi = std::min(layouts.find(';', start), layouts.size());
    const std::string text = layouts.substr(start, semi - start);
    start = semi + 1;
    if (text.empty()) continue;
    Layout l = parse_layout(text);
    if (l.micro_batches == 0) l.micro_batches = l.pp > 1 ? 4 * l.pp : 1;
    if (!trace_path.empty()) trace.begin_run("step " + text);
    const auto t0 = std::chrono::steady_clock::now();
    const StepTimes t = simulate_gpt_step(topology, shape, l, flops, trace_path.empty() ? nullptr : &trace);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("  {:<18} {:>4} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>6.1f}% {:>8.2f}\n", text, l.micro_batches, t.step * 1e3,
               t.compute * 1e3, t.comm * 1e3, t.pipeline * 1e3, 100 * t.comm / t.step, wall);
    std::fflush(stdout);
    if (best.empty() || t.step < best_step) best = text, best_step = t.step;
  }
  fmt::print("# fastest: {} ({:.2f} ms a step)\n", best, best_step * 1e3);
  if (!trace_path.empty()) {
    trace.write(trace_path);
    fmt::print("# trace: {}\n", trace_path);
  }
  return 0;
}

}  // namespace ringgrad::bench
