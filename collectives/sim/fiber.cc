// Fiber: a stack from mmap with a guard page, and the two ways to switch onto it and back.
#include "collectives/sim/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace ringgrad::collectives::sim {

#if defined(__x86_64__)
// ringgrad_fiber_switch(save, load): pushes the callee-saved registers (System V ABI: rbp, rbx,
// r12-r15) and the SSE and x87 control words on the current stack, stores the stack pointer in
// *save, loads `load` and pops the same from there: the `ret` returns into whatever that stack
// was switched away from. A new fiber's stack is laid out by hand (Fiber::switch_in) so that
// the first switch "returns" into ringgrad_fiber_entry, which calls r13(r12) = Fiber::start(fiber).
extern "C" void ringgrad_fiber_switch(void** save, void* load);
extern "C" void ringgrad_fiber_entry();
asm(R"(
  .text
  .globl ringgrad_fiber_switch
  .type ringgrad_fiber_switch, @function
ringgrad_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr 8(%rsp)
  fldcw (%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ringgrad_fiber_switch, .-ringgrad_fiber_switch

  .globl ringgrad_fiber_entry
  .type ringgrad_fiber_entry, @function
ringgrad_fiber_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size ringgrad_fiber_entry, .-ringgrad_fiber_entry
)");
constexpr bool kHaveAssembly = true;
#else
constexpr bool kHaveAssembly = false;
#endif

namespace {

// makecontext's entry: Fiber::start with the fiber's pointer rebuilt from two ints.
void start_from_halves(unsigned hi, unsigned lo) {
  Fiber::start(reinterpret_cast<Fiber*>((static_cast<std::uintptr_t>(hi) << 32) | lo));
}

}  // namespace

FiberSwitch default_fiber_switch() { return kHaveAssembly ? FiberSwitch::kAssembly : FiberSwitch::kUcontext; }

const char* fiber_switch_name(FiberSwitch how) { return how == FiberSwitch::kAssembly ? "assembly" : "ucontext"; }

FiberSwitch parse_fiber_switch(const char* name) {
  const std::string s = name;
  if (s == "ucontext") return FiberSwitch::kUcontext;
  if (s == "assembly" && kHaveAssembly) return FiberSwitch::kAssembly;
  if (s == "assembly") throw std::invalid_argument("fiber switch 'assembly' exists on x86-64 only: use ucontext");
  throw std::invalid_argument("unknown fiber switch '" + s + "': expected ucontext or assembly");
}

Fiber::Fiber(std::function<void()> body, std::size_t stack_bytes, FiberSwitch how) : body_(std::move(body)), how_(how) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t stack = (stack_bytes + page - 1) / page * page;
  mapped_ = stack + page;
  // MAP_NORESERVE: only the pages a rank touches are ever backed (a few KiB of each stack).
  void* m = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED)
    throw std::system_error(errno, std::generic_category(), "fiber: mapping a stack of " + std::to_string(mapped_) + " bytes");
  mapping_ = static_cast<std::byte*>(m);
  ::mprotect(mapping_, page, PROT_NONE);  // the guard page, at the low end: stacks grow down
  std::byte* top = mapping_ + mapped_;
  if (how_ == FiberSwitch::kUcontext) {
    ::getcontext(&context_);
    context_.uc_stack.ss_sp = mapping_ + page;
    context_.uc_stack.ss_size = stack;
    context_.uc_link = nullptr;
    // makecontext passes ints: the pointer goes in two halves.
    const auto bits = reinterpret_cast<std::uintptr_t>(this);
    ::makecontext(&context_, reinterpret_cast<void (*)()>(&start_from_halves), 2, static_cast<unsigned>(bits >> 32),
                  static_cast<unsigned>(bits & 0xffffffffu));
  } else {
#if defined(__x86_64__)
    // What ringgrad_fiber_switch pops, lowest address first: x87 control word, MXCSR, r15, r14,
    // r13 (the function), r12 (its argument), rbx, rbp, the return address. After the `ret` the
    // stack pointer is 16-byte aligned, as the `call` in ringgrad_fiber_entry needs.
    auto* frame = reinterpret_cast<std::uint64_t*>(top - 88);
    const std::uint64_t values[9] = {
        0x037F, 0x1F80,                                   // the control words' defaults
        0, 0,                                             // r15, r14
        reinterpret_cast<std::uint64_t>(&Fiber::start),   // r13
        reinterpret_cast<std::uint64_t>(this),            // r12
        0, 0,                                             // rbx, rbp
        reinterpret_cast<std::uint64_t>(&ringgrad_fiber_entry)};
    std::memcpy(frame, values, sizeof values);
    stack_pointer_ = frame;
#else
    throw std::invalid_argument("fiber switch 'assembly' exists on x86-64 only");
#endif
  }
}

Fiber::~Fiber() {
  if (mapping_) ::munmap(mapping_, mapped_);
}

void Fiber::start(Fiber* self) {
  try {
    self->body_();
  } catch (...) {
    self->error_ = std::current_exception();
  }
  self->finished_ = true;
  self->switch_out();  // never resumed again
}

void Fiber::switch_in() {
  if (how_ == FiberSwitch::kUcontext) {
    ::swapcontext(&caller_context_, &context_);
    return;
  }
#if defined(__x86_64__)
  ringgrad_fiber_switch(&caller_stack_pointer_, stack_pointer_);
#endif
}

void Fiber::switch_out() {
  if (how_ == FiberSwitch::kUcontext) {
    ::swapcontext(&context_, &caller_context_);
    return;
  }
#if defined(__x86_64__)
  ringgrad_fiber_switch(&stack_pointer_, caller_stack_pointer_);
#endif
}

void Fiber::resume() {
  if (finished_) return;
  switch_in();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void Fiber::suspend() { switch_out(); }

}  // namespace ringgrad::collectives::sim
