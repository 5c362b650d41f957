// Trace: the spans of this process's training work, for a timeline (Chrome trace-event JSON,
// which Perfetto and chrome://tracing open; nn/parallel/timeline.h writes it with the
// collectives beside). What records here: each module's forward (nn::Module::operator()), its
// backward (the graph nodes its forward recorded, run back to back, become one span named
// after it), whatever a program marks with Span (the optimizer step), and spans of other rows
// a caller records itself (DDP's buckets, from ready to reduced).
//
// Off until start(); while off, a module call or graph node pays one relaxed load of a flag.
// Times are steady-clock microseconds (the clock the collectives' flight recorder uses).
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace ringgrad::trace {

/// One complete span ("X" event): `name` on row `tid` from t0 to t1 (us). Names and
/// categories are interned (intern()): they live as long as the process.
struct Event {
  const char* name;
  const char* category;  // "forward", "backward", "step", "ddp", ...
  int tid;               // the thread's id (gettid), or a row of the caller's choosing
  double t0_us, t1_us;
};

namespace detail {
inline std::atomic<bool> enabled{false};
}

/// Whether spans are being recorded.
inline bool enabled() { return detail::enabled.load(std::memory_order_relaxed); }
/// Starts recording (dropping what an earlier start left); stop() ends it; take() returns the
/// spans recorded since start(), oldest first, and forgets them.
void start();
void stop();
std::vector<Event> take();

/// Steady-clock microseconds; this thread's id (gettid).
double now_us();
int thread_id();
/// A copy of `text` that is never freed, the same pointer for the same text.
const char* intern(const std::string& text);

/// Records a span (when enabled).
void record(const char* name, const char* category, int tid, double t0_us, double t1_us);

/// A row of the timeline that is not a thread (DDP's buckets): a negative id, the same for the
/// same name; rows() lists them with their names.
int named_row(const char* name);
std::vector<std::pair<int, const char*>> rows();

/// A span on this thread from construction to destruction (when enabled at construction).
class Span {
 public:
  Span(const char* name, const char* category) : name_(name), category_(category), t0_(enabled() ? now_us() : -1) {}
  ~Span() {
    if (t0_ >= 0) record(name_, category_, thread_id(), t0_, now_us());
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  const char* category_;
  double t0_;
};

/// The innermost module whose forward runs on this thread (nullptr when none, or when
/// tracing is off): graph nodes recorded meanwhile carry it, so their backward is named.
const char* current_module();
/// A module's forward: while it lives, current_module() is `name`, and at its end the
/// forward span is recorded (category "forward"). Does nothing while tracing is off.
class ModuleScope {
 public:
  explicit ModuleScope(const char* name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  const char* name_;
  const char* outer_;
  double t0_;
};

/// A graph node of `module` ran from t0 to now on this thread (backward): extends this
/// thread's last span when it is that module's backward too, else starts one.
void record_backward(const char* module, double t0_us);

}  // namespace ringgrad::trace
