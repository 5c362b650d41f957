// ChromeTrace: the simulated ranks' operations as Chrome trace-event JSON, for the viewer real
// runs use (Perfetto, chrome://tracing; nn/parallel/timeline.h): one process per rank, as in a
// real run's timeline, its operations on one row and the simulated call they belong to on
// another. Several runs (the rows of a ringgrad-sim table) follow one another on one time axis.
//
//   ChromeTrace trace;
//   WorldOptions options;
//   options.observer = trace.observer();
//   trace.begin_run("all_reduce ring 1 MiB");  ... world.run(...) ...
//   trace.write("sim.json");
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "collectives/sim/world.h"

namespace ringgrad::collectives::sim {

class ChromeTrace {
 public:
  /// Keeps at most `max_spans` spans (the first ones); write() says how many it dropped.
  explicit ChromeTrace(std::size_t max_spans = 4'000'000) : max_spans_(max_spans) {}

  /// WorldOptions::observer: records each span of the run begun last.
  std::function<void(const SimSpan&)> observer();
  /// Spans from now on belong to a run named `name`, placed after the runs before it.
  void begin_run(std::string name);
  /// Writes the file; throws std::runtime_error when it cannot.
  void write(const std::string& path) const;
  std::size_t dropped() const { return dropped_; }

 private:
  struct Run {
    std::string name;
    double offset_us, end_us;
  };
  std::vector<SimSpan> spans_;
  std::vector<std::size_t> run_of_;  // per span: its run
  std::vector<Run> runs_;
  std::size_t max_spans_, dropped_ = 0;
  int ranks_ = 0;
};

}  // namespace ringgrad::collectives::sim
