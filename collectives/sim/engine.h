// Engine: the discrete-event loop under the simulator. Virtual time in seconds. Each simulated
// rank runs its blocking code in a fiber (fiber.h) with a clock of its own, and gives the thread
// back only when it must wait (block()); events are callbacks at a virtual time, run in time
// order. The loop:
//
//   while work is left:   run every ready rank until it blocks or returns (ranks woken in turn)
//                         then the earliest event (equal times: the one scheduled first)
//
// Nothing depends on the machine's clock or on thread scheduling, so a run gives the same
// times, bit for bit, every time. A rank may act ahead of the loop's time (its clock runs ahead
// when it computes, or when it was woken by a message that arrives later than the event that
// delivered it); what it does to shared state it schedules as an event at its own time, never
// earlier than now(), so shared state changes in time order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/sim/fiber.h"

namespace ringgrad::collectives::sim {

class Engine {
 public:
  /// `ranks` fibers of `stack_bytes` each, switched by `how`.
  explicit Engine(int ranks, FiberSwitch how = default_fiber_switch(), std::size_t stack_bytes = 256 << 10);
  ~Engine();

  int ranks() const { return static_cast<int>(clocks_.size()); }

  /// Runs body(r) for every rank r, each in its fiber from virtual time 0 (ranks' clocks and the
  /// loop's time start at 0), until every body has returned and no event is left. Rethrows the
  /// exception of the lowest rank that threw; throws std::runtime_error naming the ranks when
  /// they wait for one another forever (a deadlock), with what each waits for (block()'s words).
  void run(const std::function<void(int rank)>& body);

  /// The loop's time: the time of the event being run, or of the one that woke the running rank.
  double now() const { return now_; }
  /// Rank r's clock; the running rank moves its own forward (never below now()).
  double& clock(int r) { return clocks_[static_cast<std::size_t>(r)]; }

  /// Runs `action` at virtual time t (>= now()), after the events scheduled before it for the
  /// same time; with `order` (from next_order()), after those of the same time and lower order.
  void at(double t, std::function<void()> action) { at(t, next_order(), std::move(action)); }
  void at(double t, std::uint64_t order, std::function<void()> action);
  /// A number above every one handed out before: events scheduled later with the same time and
  /// an earlier number run first (a message's hops keep the order its sender sent it in).
  std::uint64_t next_order() { return scheduled_++; }

  /// From inside rank r's body: gives the thread back until wake(r). `waits_for` and `peer` say
  /// what for, in a deadlock report: "rank 4 waits for a message from rank 3".
  void block(int r, const char* waits_for, int peer);
  /// Makes blocked rank r ready to run again (nothing when it is not blocked).
  void wake(int r);

 private:
  // The heap holds small records; their actions wait in slots, so sifting moves 24 bytes, not a
  // std::function (a third of a 4,096-rank run's time went to those moves).
  struct Event {
    double time;
    std::uint64_t order;
    std::size_t slot;
    bool operator>(const Event& o) const { return time > o.time || (time == o.time && order > o.order); }
  };

  std::vector<double> clocks_;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  struct Wait {
    const char* waits_for = nullptr;  // null: not blocked
    int peer = -1;
  };
  std::vector<Wait> blocked_;  // per rank
  int running_ = -1;
  std::vector<int> ready_;     // ranks to run, in the order woken
  std::vector<Event> events_;  // a min-heap on (time, order)
  std::vector<std::function<void()>> actions_;
  std::vector<std::size_t> free_slots_;
  std::uint64_t scheduled_ = 0;
  double now_ = 0;
  FiberSwitch how_;
  std::size_t stack_bytes_;
};

}  // namespace ringgrad::collectives::sim
