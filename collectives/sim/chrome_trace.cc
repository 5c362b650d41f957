// ChromeTrace: spans kept in memory, written as one JSON array of "X" events with the metadata
// that names each process "rank r".
#include "collectives/sim/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace ringgrad::collectives::sim {

std::function<void(const SimSpan&)> ChromeTrace::observer() {
  return [this](const SimSpan& s) {
    if (runs_.empty()) begin_run("run");
    Run& run = runs_.back();
    run.end_us = std::max(run.end_us, run.offset_us + s.t1 * 1e6);
    ranks_ = std::max(ranks_, s.rank + 1);
    if (spans_.size() >= max_spans_) {
      ++dropped_;
      return;
    }
    spans_.push_back(s);
    run_of_.push_back(runs_.size() - 1);
  };
}

void ChromeTrace::begin_run(std::string name) {
  // A gap of a tenth of the run before, so consecutive runs stay apart.
  const double offset = runs_.empty() ? 0 : runs_.back().end_us + (runs_.back().end_us - runs_.back().offset_us) / 10 + 1;
  runs_.push_back(Run{std::move(name), offset, offset});
}

void ChromeTrace::write(const std::string& path) const {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) throw std::runtime_error(fmt::format("--trace {}: cannot write it", path));
  fmt::print(
      f.get(),
      "{{\"displayTimeUnit\": \"ns\", \"otherData\": {{\"simulated\": true, \"dropped_spans\": {}}},\n\"traceEvents\": [\n",
      dropped_);
  for (int r = 0; r < ranks_; ++r) {
    fmt::print(f.get(), "{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {0}, \"args\": {{\"name\": \"rank {0}\"}}}},\n",
               r);
    fmt::print(f.get(), "{{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {0}, \"args\": {{\"sort_index\": {0}}}}},\n",
               r);
    fmt::print(f.get(),
               "{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": \"link\"}}}},\n", r);
    fmt::print(f.get(),
               "{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": 1, \"args\": {{\"name\": \"call\"}}}},\n", r);
    for (const Run& run : runs_)
      fmt::print(
          f.get(),
          "{{\"name\": \"{}\", \"cat\": \"call\", \"ph\": \"X\", \"pid\": {}, \"tid\": 1, \"ts\": {:.4f}, \"dur\": {:.4f}}},\n",
          run.name, r, run.offset_us, run.end_us - run.offset_us);
  }
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    const SimSpan& s = spans_[i];
    const double offset = runs_[run_of_[i]].offset_us;
    fmt::print(f.get(),
               "{{\"name\": \"{}\", \"cat\": \"sim\", \"ph\": \"X\", \"pid\": {}, \"tid\": 0, \"ts\": {:.4f}, \"dur\": {:.4f}, "
               "\"args\": {{\"peer\": {}, \"bytes\": {}}}}}{}\n",
               s.name, s.rank, offset + s.t0 * 1e6, (s.t1 - s.t0) * 1e6, s.peer, s.bytes, i + 1 < spans_.size() ? "," : "");
  }
  if (spans_.empty()) fmt::print(f.get(), "{{\"name\": \"empty\", \"ph\": \"M\", \"pid\": 0}}\n");
  fmt::print(f.get(), "]}}\n");
  if (std::ferror(f.get())) throw std::runtime_error(fmt::format("--trace {}: writing it failed", path));
}

}  // namespace ringgrad::collectives::sim
