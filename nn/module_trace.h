// Tracing a model: each module's forward and backward as spans of the trace (trace/trace.h).
// A module's forward span runs around Module::operator(). Its backward span covers the graph
// nodes its forward recorded, which the engine runs back to back: an observer of backward
// (autograd/backward_observer.h) names each node after the module whose forward was innermost
// when the node was made (found by the node's sequence number), or after its op outside every
// module, and the trace joins a module's consecutive nodes into one span.
//
// While tracing is off a module call pays one relaxed load of a flag, and backward one null check
// per node.
#pragma once

namespace ringgrad::nn {

/// Starts recording spans (trace::start(), dropping what an earlier start left) and sets the
/// observer that records the backward's (autograd::set_backward_observer, replacing any other);
/// stop_tracing() ends both. trace::take() then returns the spans.
void start_tracing();
void stop_tracing();

/// A module's forward (Module::operator()) named `name`: at its end the forward span is recorded
/// (category "forward"), and the graph nodes made meanwhile on this thread, outside the forward
/// of an inner module, are `name`'s backward. Does nothing when tracing was off at construction.
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

}  // namespace ringgrad::nn
