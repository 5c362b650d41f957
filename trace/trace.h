// Trace: the spans of this process's training work, for a timeline (Chrome trace-event JSON,
// which Perfetto and chrome://tracing open; nn/parallel/timeline.h writes it with the
// collectives beside). What records here: each module's forward and backward (nn/module_trace.h
// records them, watching the modules and the autograd engine), whatever a program marks with
// Span (the optimizer step), and spans of other rows a caller records itself (DDP's buckets,
// from ready to reduced). It depends on nothing else of ringgrad's.
//
// Off until start(); while off, a Span pays one relaxed load of a flag.
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
/// spans recorded since start(), oldest first, and forgets them. A program that trains a model
/// starts and stops through nn::start_tracing() (nn/module_trace.h), which also records backward.
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

/// Backward work of `name` (a module, or an op outside any) ran from t0 to now on this thread
/// (category "backward"): extends this thread's last span when it is `name`'s backward too and
/// nothing was recorded since, else starts one; so a module's nodes, run back to back, are one span.
void record_backward(const char* name, double t0_us);

}  // namespace ringgrad::trace
