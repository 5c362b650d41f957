// The trace's one buffer: spans appended under a mutex (a few hundred per training step), the
// interned names, and the named rows.
#include "trace/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <set>
#include <utility>

namespace ringgrad::trace {
namespace {

std::mutex mutex;
std::vector<Event> events;
std::set<std::string> names;  // interned: node-based, so pointers stay valid as it grows
std::vector<std::pair<int, const char*>> named_rows;
thread_local std::size_t last_backward = SIZE_MAX;  // this thread's open backward span in `events`
const char* const kBackward = "backward";

}  // namespace

void start() {
  std::lock_guard lock(mutex);
  events.clear();
  detail::enabled.store(true, std::memory_order_relaxed);
}

void stop() { detail::enabled.store(false, std::memory_order_relaxed); }

std::vector<Event> take() {
  std::lock_guard lock(mutex);
  return std::exchange(events, {});
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int thread_id() {
  thread_local const int id = static_cast<int>(::syscall(SYS_gettid));
  return id;
}

const char* intern(const std::string& text) {
  std::lock_guard lock(mutex);
  return names.insert(text).first->c_str();
}

void record(const char* name, const char* category, int tid, double t0_us, double t1_us) {
  if (!enabled()) return;
  std::lock_guard lock(mutex);
  events.push_back({name, category, tid, t0_us, t1_us});
}

int named_row(const char* name) {
  std::lock_guard lock(mutex);
  for (const auto& [id, row] : named_rows)
    if (row == name) return id;
  named_rows.emplace_back(-1 - static_cast<int>(named_rows.size()), name);
  return named_rows.back().first;
}

std::vector<std::pair<int, const char*>> rows() {
  std::lock_guard lock(mutex);
  return named_rows;
}

void record_backward(const char* name, double t0_us) {
  if (!enabled()) return;
  const double t1 = now_us();
  const int tid = thread_id();
  std::lock_guard lock(mutex);
  if (last_backward + 1 == events.size()) {  // nothing recorded since this thread's last node
    Event& open = events[last_backward];
    if (open.tid == tid && open.name == name && open.category == kBackward) {
      open.t1_us = t1;  // the same module's next node: one span
      return;
    }
  }
  last_backward = events.size();
  events.push_back({name, kBackward, tid, t0_us, t1});
}

}  // namespace ringgrad::trace
