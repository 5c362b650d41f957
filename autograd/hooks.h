// Hooks on a leaf's gradient and the handles that remove them, after PyTorch's
// Tensor.register_post_accumulate_grad_hook and torch.utils.hooks.RemovableHandle. Data
// parallelism starts communicating a gradient from such a hook; a handle per hook lets a strategy
// take its own hooks away when it is destroyed and leave everyone else's in place.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::autograd {

/// Owns one registered hook: remove() or the destructor, whichever comes first, removes that
/// hook and no other. Move-only; a moved-from or default-constructed handle removes nothing. It
/// may outlive what the hook was registered on, and then removes nothing either. Unlike
/// PyTorch's handle it removes on destruction (RAII): keep it as long as the hook should run.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  /// A handle whose remove() calls `remove` once (for whoever keeps a list of hooks).
  explicit RemovableHandle(std::function<void()> remove) : remove_(std::move(remove)) {}
  ~RemovableHandle() { remove(); }
  RemovableHandle(RemovableHandle&& other) noexcept;
  RemovableHandle& operator=(RemovableHandle&& other) noexcept;
  RemovableHandle(const RemovableHandle&) = delete;
  RemovableHandle& operator=(const RemovableHandle&) = delete;

  /// Removes the hook now; later calls, and the destructor, do nothing.
  void remove();
  /// True until the hook is removed (false for a moved-from or default-constructed handle).
  bool active() const { return static_cast<bool>(remove_); }

 private:
  std::function<void()> remove_;
};

/// A fresh hook id, never handed out before (in this process).
std::uint64_t next_hook_id();

/// Appends `hook` (a struct with a std::uint64_t `id`) to `list` under a fresh id, and returns
/// the handle that erases that entry from `list` again: the one way hooks get added, for every
/// kind of hook list (leaves' here, modules' in nn/module.h).
template <typename Hook>
RemovableHandle add_hook(const std::shared_ptr<std::vector<Hook>>& list, Hook hook) {
  const std::uint64_t id = hook.id = next_hook_id();
  list->push_back(std::move(hook));
  return RemovableHandle([weak = std::weak_ptr<std::vector<Hook>>(list), id] {
    if (auto live = weak.lock()) std::erase_if(*live, [id](const Hook& h) { return h.id == id; });
  });
}

/// Runs `hook(leaf)` in every backward pass once `leaf`'s gradient is fully accumulated
/// (leaf.grad() is complete for this pass), after the hooks registered before it. Hooks may
/// register or remove hooks of the same leaf; that takes effect from the next backward. Returns
/// the handle that removes this hook. Throws std::invalid_argument when `leaf` is not a leaf
/// that requires grad: its hook would never run.
[[nodiscard]] RemovableHandle register_post_accumulate_grad_hook(Tensor& leaf, std::function<void(Tensor&)> hook);

}  // namespace ringgrad::autograd
