// Wall-clock time per kind of op, the breakdown bench/train_bench prints. Off by default:
// then a ProfileScope is one well-predicted branch and reads no clock. On a GPU, kernels run
// after their launch returns, so while profiling is on each scope waits for the GPUs at its
// start and end (op_profile.cc): the time charged is the work's, not the launch's.
#pragma once

#include <array>
#include <chrono>

namespace ringgrad::profile {

/// The kinds time is charged to; everything else is "other" (total minus these).
enum class OpKind { Matmul, Attention, LayerNorm, Optimizer };
inline constexpr int kOpKinds = 4;

/// "matmul", "attention", "layer_norm", "optimizer".
const char* op_kind_name(OpKind kind);

namespace detail {
inline bool enabled = false;
inline std::array<double, kOpKinds> seconds{};
/// Waits for every GPU that holds tensors (none without CUDA), then reads the clock.
std::chrono::steady_clock::time_point synchronized_now();
}  // namespace detail

/// Starts (or stops) charging time; single-threaded, like the kernels it times.
inline void set_enabled(bool on) { detail::enabled = on; }
/// Seconds charged to `kind` since the last reset().
inline double seconds(OpKind kind) { return detail::seconds[static_cast<int>(kind)]; }
inline void reset() { detail::seconds.fill(0); }

/// Charges the time from construction to destruction to `kind` when profiling is on.
/// Scopes must not nest (the time would be charged twice).
class ProfileScope {
 public:
  explicit ProfileScope(OpKind kind) : kind_(kind) {
    if (detail::enabled) start_ = detail::synchronized_now();
  }
  ~ProfileScope() {
    if (detail::enabled && start_ != std::chrono::steady_clock::time_point{}) {
      detail::seconds[static_cast<int>(kind_)] +=
          std::chrono::duration<double>(detail::synchronized_now() - start_).count();
    }
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  OpKind kind_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace ringgrad::profile
