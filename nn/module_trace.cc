// Module tracing: which module made which graph nodes (a list of changes, by sequence number),
// the forward spans, and the observer that records each node of backward under its module.
#include "nn/module_trace.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <vector>

#include "autograd/backward_observer.h"
#include "trace/trace.h"

namespace ringgrad::nn {
namespace {

// On this thread, nodes from sequence number `first_seq` on were made inside `module`'s forward
// (nullptr: outside every traced module), up to the next change. Each traced forward adds one at
// its start and one at its end, so the list grows with the trace; tracing's next start drops it.
struct ModuleChange {
  std::uint64_t first_seq;
  const char* module;
};

std::atomic<std::uint64_t> session{0};  // start_tracing() calls so far
thread_local std::uint64_t changes_session = 0;
thread_local std::vector<ModuleChange> changes;
thread_local const char* current_module = nullptr;  // the innermost traced forward on this thread

std::vector<ModuleChange>& this_thread_changes() {
  const std::uint64_t now = session.load(std::memory_order_relaxed);
  if (changes_session != now) changes.clear(), changes_session = now;
  return changes;
}

// From the next node made on this thread on, nodes are `module`'s.
void enter(const char* module) {
  std::vector<ModuleChange>& c = this_thread_changes();
  const std::uint64_t seq = autograd::next_sequence_nr();
  if (!c.empty() && c.back().first_seq == seq) c.back().module = module;  // no node since the last change
  else c.push_back({seq, module});
  current_module = module;
}

// The module whose forward made node `seq` of this thread, or nullptr.
const char* module_of(std::uint64_t seq) {
  const std::vector<ModuleChange>& c = this_thread_changes();
  const auto after = std::upper_bound(c.begin(), c.end(), seq,
                                      [](std::uint64_t s, const ModuleChange& m) { return s < m.first_seq; });
  return after == c.begin() ? nullptr : std::prev(after)->module;
}

thread_local std::vector<double> pass_t0, node_t0;  // start times of the passes and nodes running

double pop(std::vector<double>& stack) {
  const double top = stack.back();
  stack.pop_back();
  return top;
}

// The whole pass is one span "backward" (category "backward pass"); each node is backward work
// of its module, or of its op outside every module. Start times are stacks, so a backward run
// from inside a node (a hook's) is timed on its own.
class BackwardTracer final : public autograd::BackwardObserver {
 public:
  void on_backward_begin() override { pass_t0.push_back(trace::now_us()); }
  void on_backward_end() override {
    trace::record("backward", "backward pass", trace::thread_id(), pop(pass_t0), trace::now_us());
  }
  void on_node_begin(const autograd::Node&) override { node_t0.push_back(trace::now_us()); }
  void on_node_end(const autograd::Node& node) override {
    const char* module = module_of(node.sequence_nr());
    trace::record_backward(module ? module : trace::intern(node.name()), pop(node_t0));
  }
};

BackwardTracer backward_tracer;

}  // namespace

void start_tracing() {
  session.fetch_add(1, std::memory_order_relaxed);
  trace::start();
  autograd::set_backward_observer(&backward_tracer);
}

void stop_tracing() {
  autograd::set_backward_observer(nullptr);
  trace::stop();
}

ModuleScope::ModuleScope(const char* name)
    : name_(name), outer_(current_module), t0_(trace::enabled() ? trace::now_us() : -1) {
  if (t0_ >= 0) enter(name);
}

ModuleScope::~ModuleScope() {
  if (t0_ < 0) return;
  enter(outer_);
  trace::record(name_, "forward", trace::thread_id(), t0_, trace::now_us());
}

}  // namespace ringgrad::nn
