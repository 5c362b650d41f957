// Timeline: a job's work as one Chrome trace-event JSON file (Perfetto and chrome://tracing
// open it) and an SVG of the same events, for seeing where each rank's time goes: is DDP's
// all-reduce hidden behind backward, where is the pipeline's bubble.
//
// One process per rank; one row per thread (the training thread, each communicator's worker)
// and one for DDP's buckets. Spans: each module's forward and backward and whatever the program
// marks (trace/trace.h: the optimizer step, waits for communication), each collective of the
// traced communicators from its flight record (kind, sequence number, bytes, dtype, algorithm,
// the link it took), and each DDP bucket from ready to reduced.
//
//   Timeline timeline(world, {&world});
//   timeline.start(model.get());   // names the model's modules, starts recording
//   ... the steps to see ...
//   timeline.write("trace.json");  // every rank calls it; rank 0 writes trace.json and trace.json.svg
//
// Clocks: ranks on rank 0's host share its steady clock (CLOCK_MONOTONIC), so their offset is
// exactly 0; a rank on another host is given the offset NTP would estimate from 8 round trips
// with rank 0 (the shortest kept), and its error, half that round trip, is in the file
// ("otherData") and the summary.
#pragma once

#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "nn/module.h"

namespace ringgrad::nn::parallel {

/// What write() gathered: events on all ranks, and the largest clock-alignment error (us).
struct TimelineSummary {
  std::size_t events = 0;
  double clock_error_us = 0;
};

class Timeline {
 public:
  /// `traced`: the communicators whose collectives appear (the world, the groups). Collectives
  /// come from their flight records, so only the last RINGGRAD_FLIGHT_RECORDER_ENTRIES (default
  /// 2000) of each are there: enough for a few training steps; more for a long window.
  Timeline(collectives::Communicator& world, std::vector<const collectives::Communicator*> traced);
  /// Starts recording; with `model`, first names its modules for their spans (set_trace_names).
  void start(Module* model = nullptr);
  /// Stops recording and writes the file on rank 0 (a collective of the world communicator:
  /// every rank calls it). Throws std::runtime_error on rank 0 when the file cannot be written.
  TimelineSummary write(const std::string& path);
  int rank() const { return world_.rank(); }

 private:
  collectives::Communicator& world_;
  std::vector<const collectives::Communicator*> traced_;
  double start_us_ = 0;
  std::vector<std::uint64_t> first_seq_;  // per traced communicator: its next collective at start()
};

/// --trace FILE in a training loop: traces iterations [first, first + count) and writes FILE
/// when they are done (every rank calls at() with the same iterations), printing on rank 0
/// what it wrote. An empty path traces nothing.
class TraceWindow {
 public:
  /// `traced`: the communicators whose collectives appear (empty: the world's). Throws
  /// std::invalid_argument when `path` is a directory or its directory does not exist.
  TraceWindow(std::string path, collectives::Communicator& world, Module* model,
              std::vector<const collectives::Communicator*> traced = {}, std::int64_t first = 2, std::int64_t count = 3);
  /// At the top of iteration `it`: starts recording at `first`, writes at first + count.
  void at(std::int64_t it);
  /// After the loop, which stopped before iteration `it`: writes what a shorter run traced.
  void finish(std::int64_t it);

 private:
  std::string path_;
  Timeline timeline_;
  Module* model_;
  std::int64_t first_, count_;
  bool started_ = false, written_ = false;
};

/// The same events as an SVG: one horizontal band per (rank, row), time to the right, a box per
/// span coloured by category, its name where it fits, and a time axis in ms from the first span
/// (ticks 1, 2 or 5 x 10^k ms apart). `events_json`: the file's traceEvents.
std::string timeline_svg(const std::string& events_json);

}  // namespace ringgrad::nn::parallel
