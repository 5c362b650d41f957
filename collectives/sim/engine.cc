// Engine: ranks as fibers, events in a heap ordered by (time, order scheduled).
#include "collectives/sim/engine.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace ringgrad::collectives::sim {

Engine::Engine(int ranks, FiberSwitch how, std::size_t stack_bytes)
    : clocks_(static_cast<std::size_t>(ranks), 0.0),
      blocked_(static_cast<std::size_t>(ranks)),
      how_(how),
      stack_bytes_(stack_bytes) {}

Engine::~Engine() = default;

void Engine::at(double t, std::uint64_t order, std::function<void()> action) {
  std::size_t slot = actions_.size();
  if (free_slots_.empty()) {
    actions_.push_back(std::move(action));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    actions_[slot] = std::move(action);
  }
  events_.push_back(Event{std::max(t, now_), order, slot});
  std::push_heap(events_.begin(), events_.end(), std::greater<>());
}

void Engine::block(int r, const char* waits_for, int peer) {
  blocked_[static_cast<std::size_t>(r)] = Wait{waits_for, peer};
  fibers_[static_cast<std::size_t>(r)]->suspend();
}

void Engine::wake(int r) {
  Wait& w = blocked_[static_cast<std::size_t>(r)];
  if (!w.waits_for) return;
  w = Wait{};
  ready_.push_back(r);
}

void Engine::run(const std::function<void(int rank)>& body) {
  const int p = ranks();
  std::fill(clocks_.begin(), clocks_.end(), 0.0);
  now_ = 0;
  fibers_.clear();
  ready_.clear();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    fibers_.push_back(std::make_unique<Fiber>([&body, r] { body(r); }, stack_bytes_, how_));
    ready_.push_back(r);
  }
  for (;;) {
    // Ready ranks in the order they were woken; a rank run here may wake more.
    for (std::size_t i = 0; i < ready_.size(); ++i) {
      const int r = ready_[i];
      try {
        fibers_[static_cast<std::size_t>(r)]->resume();
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    }
    ready_.clear();
    if (events_.empty()) break;
    std::pop_heap(events_.begin(), events_.end(), std::greater<>());
    const Event e = events_.back();
    events_.pop_back();
    now_ = e.time;
    const std::function<void()> action = std::move(actions_[e.slot]);
    free_slots_.push_back(e.slot);
    action();
  }
  for (const auto& e : errors)
    if (e) {
      fibers_.clear();
      std::rethrow_exception(e);
    }
  std::string stuck;
  int n = 0;
  for (int r = 0; r < p; ++r) {
    const Wait& w = blocked_[static_cast<std::size_t>(r)];
    if (!w.waits_for) continue;
    if (n++ < 8) stuck += fmt::format("{}rank {} waits for {} {}", stuck.empty() ? "" : "; ", r, w.waits_for, w.peer);
    blocked_[static_cast<std::size_t>(r)] = Wait{};
  }
  fibers_.clear();
  if (n > 0)
    throw std::runtime_error(fmt::format("simulated ranks wait for one another forever (a deadlock): {}{}", stuck,
                                         n > 8 ? fmt::format("; and {} more ranks", n - 8) : ""));
}

}  // namespace ringgrad::collectives::sim
