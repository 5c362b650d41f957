// The timeline of 3 DDP steps on 2 real processes (nn/parallel/timeline.h): the file is JSON
// with every rank in it; on every row the spans nest (a span begins and ends inside the one
// around it, or after it); every collective of the steps has a span on both ranks with the same
// sequence number; the model's modules have forward and backward spans under their names; each
// DDP bucket has its span, and its row in the SVG; the "communication wait" spans add up to the
// strategy's own wait_seconds; and every all-reduce is outstanding only inside its step's
// window, from the start of backward to the end of the wait (how much of it hides behind
// backward depends on the machine's load, so that share is printed, not asserted: timing
// belongs in bench/).
// Ring attention's timeline on 2 ranks: every block's compute and transfer is there, each transfer
// posted before the compute it should hide behind, and at least one arriving during a compute.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/make_data_parallel.h"
#include "nn/parallel/model_parallel/ring_attention.h"
#include "nn/parallel/timeline.h"
#include "tests/support/multiprocess.h"
#include "tensor/random.h"

using namespace ringgrad;
using namespace ringgrad::nn;
using namespace ringgrad::nn::parallel;
using namespace ringgrad::test;  // run_ranks, check, describe
using nlohmann::json;

namespace {

struct Interval {
  double t0, t1;
};

// Total length of the union of `spans`.
double covered(std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end(), [](const Interval& a, const Interval& b) { return a.t0 < b.t0; });
  double total = 0, start = -1e300, end = -1e300;
  for (const Interval& s : spans) {
    if (s.t0 > end) {
      total += std::max(0.0, end - start);
      start = s.t0, end = s.t1;
    } else {
      end = std::max(end, s.t1);
    }
  }
  return total + std::max(0.0, end - start);
}

// Length of the part of `a` (a union) inside `b` (a union): |a| + |b| - |a or b|.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> both = a;
  both.insert(both.end(), b.begin(), b.end());
  return covered(a) + covered(b) - covered(both);
}

}  // namespace

TEST_CASE("timeline: 3 DDP steps on 2 ranks, every span nested, every collective on both ranks") {
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("timeline_{}.json", ::getpid())).string();
  const auto results = run_ranks(2, [&](const transport::Config& config) {
    collectives::Communicator world(config, collectives::CommOptions{});
    manual_seed(3);
    auto model = std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
        std::make_shared<Linear>(64, 256), std::make_shared<ReLU>(), std::make_shared<Linear>(256, 256),
        std::make_shared<ReLU>(), std::make_shared<Linear>(256, 10)});
    DataParallelOptions options;
    options.bucket_cap_mb = 0.1;  // several buckets
    auto dp = make_data_parallel("ddp", model, world, {{model->parameters()}}, [](std::vector<ParamGroup> g) {
      return std::make_unique<SGD>(std::move(g), 0.01);
    }, options);
    Generator gen(10 + static_cast<std::uint64_t>(world.rank()));
    auto step = [&] {
      Tensor x = Tensor::zeros({32, 64});
      kernels::normal_(x, 0.0, 1.0, gen);
      dp->zero_grad();
      dp->backward(cross_entropy(dp->forward(x), Tensor::from_vector(std::vector<std::int64_t>(32, 3), {32})));
      dp->step();
    };
    step();  // warm up
    Timeline timeline(world, {&world});
    timeline.start(model.get());
    dp->reset_stats();
    for (int i = 0; i < 3; ++i) step();
    const double wait_us = dp->stats().wait_seconds * 1e6;
    const TimelineSummary summary = timeline.write(path);
    if (world.rank() != 0) return;

    const json file = json::parse(std::ifstream(path));
    const json& events = file.at("traceEvents");
    check(summary.events == events.size(), "summary counts the events written");
    std::set<int> ranks;
    std::map<std::pair<int, int>, std::vector<Interval>> rows;
    std::map<int, std::set<std::uint64_t>> seqs;  // rank -> collective sequence numbers
    std::set<std::string> forward, backward, buckets;
    double waits = 0;
    std::vector<Interval> all_reduce, backward_pass, wait_spans;
    for (const json& e : events) {
      ranks.insert(e.at("pid").get<int>());
      if (e.at("ph") != "X") continue;
      const double t0 = e.at("ts"), t1 = t0 + e.at("dur").get<double>();
      const int rank = e.at("pid");
      rows[{rank, e.at("tid").get<int>()}].push_back({t0, t1});
      const std::string cat = e.at("cat"), name = e.at("name");
      if (cat == "collective") seqs[rank].insert(e.at("args").at("seq").get<std::uint64_t>());
      if (rank != 0) continue;
      if (cat == "forward") forward.insert(name);
      if (cat == "backward") backward.insert(name);
      if (cat == "ddp") buckets.insert(name);
      if (cat == "wait") waits += t1 - t0, wait_spans.push_back({t0, t1});
      // Outstanding from the moment it was queued (a bucket waiting for the worker counts too).
      if (cat == "collective" && name.starts_with("all_reduce")) all_reduce.push_back({e.at("args").at("queued_us"), t1});
      if (cat == "backward pass") backward_pass.push_back({t0, t1});
    }
    check(ranks == std::set<int>{0, 1}, "both ranks are in the file");
    for (auto& [row, spans] : rows) {  // nesting: sorted by start (outer first), each inside or after the open ones
      std::sort(spans.begin(), spans.end(), [](const Interval& a, const Interval& b) {
        return a.t0 != b.t0 ? a.t0 < b.t0 : a.t1 > b.t1;
      });
      std::vector<double> open;
      for (const Interval& s : spans) {
        while (!open.empty() && open.back() <= s.t0) open.pop_back();
        check(open.empty() || s.t1 <= open.back() + 0.01,
              fmt::format("rank {} row {}: a span [{}, {}] ends after the one around it ({})", row.first, row.second,
                          s.t0, s.t1, open.empty() ? 0.0 : open.back()));
        open.push_back(s.t1);
      }
    }
    check(!seqs[0].empty() && seqs[0] == seqs[1], fmt::format("the same collectives on both ranks: {} and {}",
                                                               seqs[0].size(), seqs[1].size()));
    check(forward.contains("0") && forward.contains("2") && forward.contains("4") && forward.contains("model"),
          "forward spans named after the modules");
    check(backward.contains("0") && backward.contains("4"), "backward spans named after the modules");
    check(buckets.size() >= 2, fmt::format("{} DDP buckets on the timeline", buckets.size()));
    check(std::abs(waits - wait_us) < 5 + 1e-3 * wait_us,
          fmt::format("the wait spans ({} us) are the strategy's wait_seconds ({} us)", waits, wait_us));
    // Each step's window: from its backward's start to the end of the last wait before the next
    // backward. An all-reduce is queued by a gradient hook (inside backward) and the wait ends only
    // after it is done, so every all-reduce lies inside a window, however loaded the machine.
    std::sort(backward_pass.begin(), backward_pass.end(), [](const Interval& a, const Interval& b) { return a.t0 < b.t0; });
    std::vector<Interval> windows;
    for (std::size_t i = 0; i < backward_pass.size(); ++i) {
      const double next = i + 1 < backward_pass.size() ? backward_pass[i + 1].t0 : 1e300;
      double end = backward_pass[i].t1;
      for (const Interval& w : wait_spans)
        if (w.t0 >= backward_pass[i].t1 && w.t0 < next) end = std::max(end, w.t1);
      windows.push_back({backward_pass[i].t0, end});
    }
    check(backward_pass.size() == 3, fmt::format("{} backward passes on rank 0's timeline", backward_pass.size()));
    const double reduce = covered(all_reduce), hidden = overlap(all_reduce, backward_pass);
    fmt::print("timeline: all-reduce {:.0f} us, {:.0f}% of it during backward; exposed {:.0f} us, comm wait {:.0f} us\n",
               reduce, 100 * hidden / reduce, reduce - hidden, wait_us);
    const double outside = reduce - overlap(all_reduce, windows);
    check(outside < 1.0, fmt::format("{} us of all-reduce outside the steps' backward-to-wait windows", outside));
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
  // The picture: DDP's rows under their names, a time axis under the bands.
  std::stringstream svg;
  svg << std::ifstream(path + ".svg").rdbuf();
  CHECK(svg.str().find(">rank 0: DDP bucket 0: ready -&gt; reduced</text>") != std::string::npos);
  CHECK(svg.str().find(">time (ms), ") != std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".svg");
}

TEST_CASE("timeline: ring attention on 2 ranks, each block's transfer posted before a compute and overlapping it") {
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("timeline_ring_{}.json", ::getpid())).string();
  const auto results = run_ranks(2, [&](const transport::Config& config) {
    collectives::Communicator world(config, collectives::CommOptions{});
    constexpr std::int64_t B = 2, t = 128, C = 64, H = 4;  // t: each rank's positions, T = 256
    constexpr int kIterations = 2;
    manual_seed(5);
    Tensor qkv = Tensor::zeros({B, t, 3 * C}, DType::Float64);
    kernels::uniform_(qkv, -1, 1);
    qkv.set_requires_grad(true);
    Timeline timeline(world, {&world});
    timeline.start();
    for (int i = 0; i < kIterations; ++i) backward(sum(ring_attention(qkv, H, world)));
    timeline.write(path);
    if (world.rank() != 0) return;

    const json file = json::parse(std::ifstream(path));
    struct Span {
      std::string what;
      Interval at;
    };
    std::map<int, std::vector<Span>> spans;  // per rank: block computes and transfers
    for (const json& e : file.at("traceEvents")) {
      if (e.at("ph") != "X" || (e.at("cat") != "ring_attention" && e.at("cat") != "transfer")) continue;
      const double t0 = e.at("ts"), t1 = t0 + e.at("dur").get<double>();
      spans[e.at("pid").get<int>()].push_back({e.at("name"), {t0, t1}});
    }
    // Each iteration in start order: the k, v block posted, then the forward of the block in hand
    // (its transfer in flight) and of the one that came; backward the same, each block's dk, dv
    // sum posted after its compute, to arrive while the next block computes.
    std::vector<std::string> expected;
    for (int i = 0; i < kIterations; ++i)
      for (const char* what : {"k, v block", "block forward", "block forward", "k, v block", "block backward",
                               "dk, dv sum", "block backward", "dk, dv sum"})
        expected.emplace_back(what);
    int overlapping = 0;
    for (int rank : {0, 1}) {
      std::vector<Span>& mine = spans[rank];
      std::sort(mine.begin(), mine.end(), [](const Span& a, const Span& b) { return a.at.t0 < b.at.t0; });
      std::vector<std::string> order;
      std::vector<Interval> compute, transfer;
      for (const Span& s : mine) {
        order.push_back(s.what);
        (s.what.starts_with("block") ? compute : transfer).push_back(s.at);
      }
      check(order == expected, fmt::format("rank {}: in start order {}, expected {}", rank, fmt::join(order, "; "),
                                           fmt::join(expected, "; ")));
      int here = 0;
      for (const Interval& x : transfer)
        here += std::any_of(compute.begin(), compute.end(), [&](const Interval& c) { return x.t0 < c.t1 && c.t0 < x.t1; });
      // How many arrive during a compute depends on the machine's load (the worker thread needs
      // a core): printed, and required of at least one transfer of the run.
      fmt::print("timeline: ring attention rank {}: {} of {} transfers arrive during a block's compute, "
                 "{:.0f}% of {:.0f} us in flight\n", rank, here, transfer.size(),
                 100 * overlap(transfer, compute) / covered(transfer), covered(transfer));
      overlapping += here;
    }
    check(overlapping >= 1, "no transfer overlaps a block's compute on either rank");
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".svg");
}
