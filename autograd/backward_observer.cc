// The one observer slot backward() reads at the start of each pass.
#include "autograd/backward_observer.h"

#include <atomic>

namespace ringgrad::autograd {
namespace {

std::atomic<BackwardObserver*> observer{nullptr};

}  // namespace

void set_backward_observer(BackwardObserver* o) { observer.store(o, std::memory_order_release); }

BackwardObserver* backward_observer() { return observer.load(std::memory_order_acquire); }

}  // namespace ringgrad::autograd
