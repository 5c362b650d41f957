// Post-accumulate-grad hooks live in a list the leaf's AutogradMeta shares with their handles:
// each hook carries an id, and a handle holds the list weakly and erases its own id from it.
#include "autograd/hooks.h"

#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>

namespace ringgrad::autograd {

RemovableHandle::RemovableHandle(RemovableHandle&& other) noexcept : remove_(std::exchange(other.remove_, nullptr)) {}

RemovableHandle& RemovableHandle::operator=(RemovableHandle&& other) noexcept {
  if (this != &other) {
    remove();  // the hook this handle owned until now goes
    remove_ = std::exchange(other.remove_, nullptr);
  }
  return *this;
}

void RemovableHandle::remove() {
  if (remove_) std::exchange(remove_, nullptr)();
}

std::uint64_t next_hook_id() {
  static std::atomic<std::uint64_t> next{0};
  return ++next;
}

RemovableHandle register_post_accumulate_grad_hook(Tensor& leaf, std::function<void(Tensor&)> hook) {
  if (!leaf.is_leaf() || !leaf.requires_grad()) {
    throw std::invalid_argument(std::string("register_post_accumulate_grad_hook: the tensor of shape ") +
                                shape_str(leaf.shape()) +
                                (leaf.is_leaf() ? " does not require grad" : " is not a leaf (an op computed it)"));
  }
  auto& hooks = leaf.autograd_meta().post_accumulate_grad_hooks;
  if (!hooks) hooks = std::make_shared<std::vector<GradHook>>();
  return add_hook(hooks, GradHook{0, std::move(hook)});
}

}  // namespace ringgrad::autograd
