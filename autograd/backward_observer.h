// The engine's one hook for whoever watches backward from outside (a tracer, a profiler): an
// observer, null unless one is set, told when a pass begins and ends and when each node runs.
// With none set, backward pays one null check per call below; it never changes what runs.
#pragma once

#include "autograd/node.h"

namespace ringgrad::autograd {

/// Watches backward(): each call comes on the thread running the pass, in the order things
/// happen (a pass's begin, then each node's begin and end around its apply(), then the pass's
/// end). A node's sequence_nr() links it to the forward code that recorded it.
class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  virtual void on_backward_begin() = 0;
  virtual void on_backward_end() = 0;
  virtual void on_node_begin(const Node& node) = 0;
  virtual void on_node_end(const Node& node) = 0;
};

/// Sets the observer every later backward() calls (nullptr: none, the default), replacing any
/// other. `observer` must outlive every pass that may call it.
void set_backward_observer(BackwardObserver* observer);
/// The observer set now, or nullptr.
BackwardObserver* backward_observer();

}  // namespace ringgrad::autograd
