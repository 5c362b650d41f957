// GradMode's switch lives in a thread_local: a NoGradGuard on one thread (evaluation, an
// optimizer step) leaves recording on for every other thread.
#include "autograd/grad_mode.h"

namespace ringgrad {
namespace {
thread_local bool grad_enabled = true;
}

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

}  // namespace ringgrad
