// The graph's nodes at work: a FunctionNode runs its backward closure once and then drops it,
// AccumulateGrad sums into a leaf's grad() and runs the leaf's hooks, and record() wires a new
// op's output to the nodes of its inputs.
#include "autograd/node.h"

#include <stdexcept>

#include "autograd/grad_mode.h"
#include "tensor/elementwise.h"
#include "tensor/view.h"

namespace ringgrad::autograd {
namespace {

thread_local std::uint64_t next_sequence = 0;

}  // namespace

Node::Node(std::string name) : name_(std::move(name)), sequence_nr_(next_sequence++) {}

std::uint64_t next_sequence_nr() { return next_sequence; }

std::vector<Tensor> FunctionNode::apply(const Tensor& grad_output) {
  if (!backward_) {
    throw std::logic_error("backward through " + name() +
                           " a second time: the graph is freed after the first backward");
  }
  return backward_(grad_output);
}

void FunctionNode::release() {
  backward_ = nullptr;
  Node::release();
}

namespace {

// True when `grad` is the only handle on its whole buffer and is laid out as `leaf` is, so
// making it the leaf's grad() copies nothing and aliases nothing.
bool sole_owner(const Tensor& grad, const Tensor& leaf) {
  const std::shared_ptr<Storage>& storage = grad.storage();
  return storage.use_count() == 1 && grad.is_contiguous() && grad.offset() == 0 &&
         storage->nbytes() == static_cast<std::size_t>(grad.numel()) * dtype_size(grad.dtype()) &&
         grad.dtype() == leaf.dtype() && grad.device() == leaf.device() && grad.shape() == leaf.shape();
}

}  // namespace

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad) {
  AutogradMeta& meta = leaf_.autograd_meta();
  if (!meta.grad.defined()) {
    // The leaf must own its grad(): optimizers and all-reduce write it in place. A gradient
    // nothing else holds (the engine has let go of it) is adopted as it is, as PyTorch steals
    // one; one shared with another branch, or a view into a larger buffer, is copied.
    meta.grad = sole_owner(grad, leaf_) ? grad.detach() : kernels::clone(grad);
  } else {
    kernels::add_(meta.grad, grad);
  }
  if (meta.post_accumulate_grad_hooks) {
    // Walk a copy: a hook may register or remove hooks of this leaf while it runs.
    const std::vector<GradHook> hooks = *meta.post_accumulate_grad_hooks;
    for (const GradHook& hook : hooks) hook.fn(leaf_);
  }
  return {};
}

std::shared_ptr<Node> grad_accumulator(Tensor& leaf) {
  AutogradMeta& meta = leaf.autograd_meta();
  std::shared_ptr<Node> node = meta.grad_accumulator.lock();
  if (!node) {
    node = std::make_shared<AccumulateGrad>(leaf);
    meta.grad_accumulator = node;
  }
  return node;
}

Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn backward) {
  if (!GradMode::is_enabled()) return out;
  bool any = false;
  for (const Tensor& t : inputs) any |= t.defined() && t.requires_grad();
  if (!any) return out;

  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  for (Tensor t : inputs) {  // by value: grad_accumulator needs a mutable handle
    if (!t.defined() || !t.requires_grad()) {
      node->next_edges.push_back(nullptr);
    } else if (t.grad_fn()) {
      node->next_edges.push_back(t.grad_fn());
    } else {
      node->next_edges.push_back(grad_accumulator(t));
    }
  }
  AutogradMeta& meta = out.autograd_meta();
  meta.requires_grad = true;
  meta.grad_fn = std::move(node);
  return out;
}

}  // namespace ringgrad::autograd
