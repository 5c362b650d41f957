// Fiber: a function run on a stack of its own, taking turns with whoever resumes it, on one
// thread. The simulator (engine.h) runs each simulated rank's blocking algorithm code in a fiber,
// so p ranks cost p stacks, not p threads, and run in the order the event loop alone decides: the
// same every run. Two ways to switch stacks:
//   kUcontext  POSIX getcontext/makecontext/swapcontext, the plain one. Each switch also saves
//              and restores the signal mask, a system call.
//   kAssembly  x86-64 only: push the six callee-saved registers and the FPU control words, swap
//              the stack pointer, pop (fiber.cc, 20 instructions): a resume and suspend cost about
//              a twentieth of ucontext's (docs/sim.md). The default where it exists, because a
//              ring all-reduce on 4,096 ranks waits 33 million times.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>

#include <ucontext.h>

namespace ringgrad::collectives::sim {

enum class FiberSwitch { kUcontext, kAssembly };

/// kAssembly on x86-64, else kUcontext.
FiberSwitch default_fiber_switch();
/// "ucontext", "assembly"; parse_fiber_switch throws std::invalid_argument for other names, and
/// for "assembly" where it does not exist.
const char* fiber_switch_name(FiberSwitch how);
FiberSwitch parse_fiber_switch(const char* name);

class Fiber {
 public:
  /// A fiber that runs `body` on a stack of `stack_bytes` (below it a guard page, so an overflow
  /// faults instead of overwriting a neighbour) once resumed. Throws std::system_error when the
  /// stack cannot be mapped.
  Fiber(std::function<void()> body, std::size_t stack_bytes, FiberSwitch how);
  /// Unmaps the stack; a fiber suspended for good (its rank deadlocked) is dropped without
  /// unwinding, leaking what its frames own.
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  /// Runs the fiber until it calls suspend() or `body` returns; rethrows what `body` threw.
  /// Called from outside any fiber.
  void resume();
  /// From inside this fiber's body: back to resume()'s caller, until the next resume().
  void suspend();
  bool finished() const { return finished_; }
  /// The bottom frame of a fiber's stack, where the first switch onto it lands; not for callers.
  static void start(Fiber* self);

 private:
  void switch_in();
  void switch_out();

  std::function<void()> body_;
  FiberSwitch how_;
  std::byte* mapping_ = nullptr;  // guard page, then the stack
  std::size_t mapped_ = 0;
  ucontext_t context_{}, caller_context_{};  // kUcontext
  void* stack_pointer_ = nullptr;            // kAssembly: the fiber's saved stack pointer
  void* caller_stack_pointer_ = nullptr;     //            and its resumer's
  std::exception_ptr error_;
  bool finished_ = false;
};

}  // namespace ringgrad::collectives::sim
