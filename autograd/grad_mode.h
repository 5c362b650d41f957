// Whether operations record the graph. Off inside NoGradGuard: evaluation, optimizer updates;
// on again inside EnableGradGuard.
#pragma once

namespace ringgrad {

/// Thread-local switch read by every differentiable op (torch.is_grad_enabled).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// RAII scope in which no graph is recorded (torch.no_grad()). Restores the previous mode.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// RAII scope in which the graph is recorded whatever the mode outside (torch.enable_grad()):
/// activation recomputation replays a forward from inside backward. Restores the previous mode.
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace ringgrad
