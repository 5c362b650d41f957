// The timeline's three steps on every rank: its spans and its communicators' collectives as
// trace events, its clock's offset to rank 0's, and the gather of every rank's events onto rank
// 0, which writes the JSON file and its SVG.
#include "nn/parallel/timeline.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "collectives/flight_recorder.h"
#include "nn/module_trace.h"
#include "trace/trace.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Communicator;
using collectives::FlightRecorder;
using nlohmann::json;

json span(const std::string& name, const std::string& category, int rank, int tid, double t0_us, double t1_us) {
  return {{"name", name}, {"cat", category}, {"ph", "X"}, {"pid", rank}, {"tid", tid}, {"ts", t0_us},
          {"dur", std::max(0.0, t1_us - t0_us)}};
}

json row_name(int rank, int tid, const std::string& name) {
  return {{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", tid}, {"args", {{"name", name}}}};
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// This rank's clock minus rank 0's (us), and the error bound, by round trips with rank 0; 0
// and 0 for ranks on rank 0's host (one CLOCK_MONOTONIC). Every rank calls it.
std::pair<double, double> clock_offset(Communicator& world) {
  const std::string host = host_name();
  std::vector<char> name(256, 0), names(256 * static_cast<std::size_t>(world.world_size()));
  std::copy(host.begin(), host.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(host.size(), 255)), name.begin());
  world.all_gather(collectives::ConstBuffer(name.data(), name.size(), collectives::DType::kUInt8),
                   collectives::Buffer(names.data(), names.size(), collectives::DType::kUInt8));
  const std::string host0(names.data());
  double offset = 0, error = 0;
  for (int r = 1; r < world.world_size(); ++r) {
    if (std::string(names.data() + 256 * r) == host0) continue;  // same host, same clock
    double best_rtt = 1e300, best_offset = 0;
    for (int k = 0; k < 8; ++k) {
      double t[3] = {trace::now_us(), 0, 0};
      if (world.rank() == 0) {
        world.send(collectives::ConstBuffer(&t[0], 1, collectives::DType::kFloat64), r);
        world.recv(collectives::Buffer(&t[1], 1, collectives::DType::kFloat64), r);
        t[2] = trace::now_us();
        if (t[2] - t[0] < best_rtt) best_rtt = t[2] - t[0], best_offset = t[1] - (t[0] + t[2]) / 2;
      } else if (world.rank() == r) {
        world.recv(collectives::Buffer(&t[0], 1, collectives::DType::kFloat64), 0);
        t[1] = trace::now_us();
        world.send(collectives::ConstBuffer(&t[1], 1, collectives::DType::kFloat64), 0);
      }
    }
    double result[2] = {best_offset, best_rtt / 2};
    if (world.rank() == 0) world.send(collectives::ConstBuffer(result, 2, collectives::DType::kFloat64), r);
    if (world.rank() == r) world.recv(collectives::Buffer(result, 2, collectives::DType::kFloat64), 0);
    if (world.rank() == r) offset = result[0], error = result[1];
  }
  return {offset, error};
}

// Says so on stderr when the flight record of a traced communicator no longer holds every
// collective since start(): the timeline then shows only the last ones.
void note_dropped(const FlightRecorder& recorder, std::uint64_t first_seq, const std::vector<FlightRecorder::Entry>& kept) {
  if (recorder.capacity() == 0) {
    fmt::print(stderr, "timeline: {}: RINGGRAD_FLIGHT_RECORDER_ENTRIES=0 turns the flight record off, so the "
                       "timeline shows none of its collectives\n", recorder.who());
    return;
  }
  const std::uint64_t oldest = kept.empty() ? recorder.recorded() : kept.front().seq;
  if (oldest <= first_seq) return;
  fmt::print(stderr, "timeline: {}: ran {} collectives while tracing, of which the flight record kept the last {} "
                     "(RINGGRAD_FLIGHT_RECORDER_ENTRIES={}): the timeline starts at #{}\n", recorder.who(),
             recorder.recorded() - first_seq, recorder.recorded() - oldest, recorder.capacity(), oldest);
}

}  // namespace

Timeline::Timeline(Communicator& world, std::vector<const Communicator*> traced)
    : world_(world), traced_(std::move(traced)) {}

void Timeline::start(Module* model) {
  if (model != nullptr) model->set_trace_names();
  start_tracing();
  start_us_ = trace::now_us();
  first_seq_.clear();
  for (const Communicator* comm : traced_) first_seq_.push_back(comm->flight_recorder().recorded());
}

TimelineSummary Timeline::write(const std::string& path) {
  stop_tracing();
  const double end_us = trace::now_us();
  const int rank = world_.rank();
  const auto [offset, error] = clock_offset(world_);
  auto aligned = [&](double us) { return us - offset; };

  // This rank's events: its spans, its collectives, and names for its rows.
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", fmt::format("rank {}", rank)}}}});
  events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
  const int me = trace::thread_id();
  events.push_back(row_name(rank, me, "training thread"));
  for (const auto& [id, name] : trace::rows()) events.push_back(row_name(rank, id, name));
  for (const trace::Event& e : trace::take())
    events.push_back(span(e.name, e.category, rank, e.tid, aligned(e.t0_us), aligned(e.t1_us)));
  std::map<int, std::string> workers;
  for (std::size_t i = 0; i < traced_.size(); ++i) {
    const Communicator* comm = traced_[i];
    const FlightRecorder& recorder = comm->flight_recorder();
    const std::vector<FlightRecorder::Entry> kept = recorder.entries();
    note_dropped(recorder, i < first_seq_.size() ? first_seq_[i] : 0, kept);
    for (const FlightRecorder::Entry& c : kept) {
      if (c.started_s * 1e6 < start_us_ || c.started_s == 0) continue;
      const double end = c.ended_s > 0 ? c.ended_s * 1e6 : end_us;  // one still running ends at the write
      json s = span(fmt::format("{} #{}", collectives::coll_name(c.kind), c.seq), "collective", rank, c.thread,
                    aligned(c.started_s * 1e6), aligned(end));
      s["args"] = {{"seq", c.seq}, {"bytes", c.bytes}, {"dtype", collectives::dtype_name(c.dtype)},
                   {"algorithm", collectives::algo_name(c.algo)}, {"link", comm->host_path()},
                   {"communicator", recorder.who()}, {"queued_us", aligned(c.queued_s * 1e6)}};
      events.push_back(std::move(s));
      if (c.thread != me) workers.emplace(c.thread, "communication worker (" + recorder.who() + ")");
    }
  }
  for (const auto& [tid, name] : workers) events.push_back(row_name(rank, tid, name));

  // Rank 0 gathers every rank's events (their sizes first, then the bytes, rank by rank).
  const std::string mine = events.dump();
  std::int64_t size = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(world_.world_size()));
  world_.all_gather(collectives::ConstBuffer(&size, 1, collectives::DType::kInt64),
                    collectives::Buffer(sizes.data(), sizes.size(), collectives::DType::kInt64));
  double worst = error;
  world_.all_reduce(collectives::ConstBuffer(&error, 1, collectives::DType::kFloat64),
                    collectives::Buffer(&worst, 1, collectives::DType::kFloat64), collectives::ReduceOp::MAX);
  TimelineSummary summary{0, worst};
  // Whether rank 0 wrote the file, for every rank: it returns, or throws, with rank 0.
  auto agree = [&](std::int32_t written) {
    world_.broadcast(collectives::ConstBuffer(&written, 1, collectives::DType::kInt32),
                     collectives::Buffer(&written, 1, collectives::DType::kInt32), 0);
    if (written == 0) throw std::runtime_error(fmt::format("timeline: rank 0 cannot write {} or {}.svg", path, path));
    return summary;
  };
  if (rank != 0) {
    world_.send(collectives::ConstBuffer(mine.data(), mine.size(), collectives::DType::kUInt8), 0);
    return agree(0);  // rank 0's answer replaces the 0
  }
  json all = json::array();
  for (int r = 0; r < world_.world_size(); ++r) {
    std::string text = mine;
    if (r != 0) {
      text.assign(static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]), '\0');
      world_.recv(collectives::Buffer(text.data(), text.size(), collectives::DType::kUInt8), r);
    }
    for (auto& e : json::parse(text)) all.push_back(std::move(e));
  }
  summary.events = all.size();
  const json file{{"traceEvents", all}, {"displayTimeUnit", "ms"},
                  {"otherData", {{"clock", "steady clock (us), every rank's aligned to rank 0's"},
                                 {"clock_error_us", worst}, {"ranks", world_.world_size()}}}};
  std::ofstream out(path);
  out << file.dump() << '\n';
  std::ofstream svg(path + ".svg");
  svg << timeline_svg(all.dump());
  return agree(out.good() && svg.good() ? 1 : 0);
}

TraceWindow::TraceWindow(std::string path, Communicator& world, Module* model, std::vector<const Communicator*> traced,
                         std::int64_t first, std::int64_t count)
    : path_(std::move(path)),
      timeline_(world, traced.empty() ? std::vector<const Communicator*>{&world} : std::move(traced)),
      model_(model),
      first_(first),
      count_(count) {
  if (path_.empty()) return;
  // Checked at the start, on every rank alike, rather than found by rank 0 at the end.
  namespace fs = std::filesystem;
  const fs::path file(path_), dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (fs::is_directory(file)) throw std::invalid_argument("--trace " + path_ + ": is a directory, not a file");
  if (!fs::is_directory(dir)) throw std::invalid_argument("--trace " + path_ + ": there is no directory " + dir.string());
}

void TraceWindow::at(std::int64_t it) {
  if (path_.empty() || written_) return;
  if (!started_ && it >= first_) {
    timeline_.start(model_);
    started_ = true;
    first_ = it;
  } else if (started_ && it >= first_ + count_) {
    finish(it);
  }
}

void TraceWindow::finish(std::int64_t it) {
  if (!path_.empty() && !started_ && timeline_.rank() == 0)
    fmt::print("trace: nothing recorded in {}: the run stopped before iteration {}, where the trace starts\n", path_,
               first_);
  if (!started_ || written_) return;
  const TimelineSummary s = timeline_.write(path_);
  written_ = true;
  if (timeline_.rank() == 0)
    fmt::print("trace: iterations {}-{} in {} and {}.svg ({} events; clocks aligned within {:.0f} us)\n", first_, it - 1,
               path_, path_, s.events, s.clock_error_us);
}

}  // namespace ringgrad::nn::parallel
