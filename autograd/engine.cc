// backward() in two passes over the recorded graph: count the edges into every reachable node,
// then run each node once all of its incoming gradients are summed (Kahn's algorithm), releasing
// it as soon as it has run so activations are freed during backward.
#include "autograd/engine.h"

#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "autograd/backward_observer.h"
#include "autograd/node.h"
#include "tensor/elementwise.h"

namespace ringgrad {

using autograd::Node;
using NodeStack = std::vector<std::shared_ptr<Node>>;

namespace {

// Leaves first: the next node to run is a ready AccumulateGrad when there is one, else the node
// made ready last. A leaf's gradient is complete the moment its AccumulateGrad is ready, and
// running it then fires the leaf's post-accumulate-grad hooks (autograd/hooks.h) as early as the
// graph allows, so a hook that starts work on the gradient (data parallelism's all-reduce of a
// bucket) overlaps that work with the rest of backward. Taken from the stack in turn, it would
// wait behind every node pushed after it: for an op whose parameter is not its last input, the
// whole chain below. PyTorch's engine gives AccumulateGrad the highest priority for this reason.
std::shared_ptr<Node> take_next(NodeStack& ready, NodeStack& leaves) {
  NodeStack& from = leaves.empty() ? ready : leaves;
  std::shared_ptr<Node> node = std::move(from.back());
  from.pop_back();
  return node;
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad) {
  if (!root.requires_grad()) {
    throw std::invalid_argument("backward: the tensor does not require grad and has no grad_fn");
  }
  Tensor seed = grad;
  if (!seed.defined()) {
    if (root.numel() != 1) {
      throw std::invalid_argument("backward: a gradient is needed for a non-scalar output of shape " +
                                  shape_str(root.shape()));
    }
    seed = Tensor::ones(root.shape(), root.dtype(), root.device());
  } else if (seed.shape() != root.shape()) {
    throw std::invalid_argument("backward: gradient shape " + shape_str(seed.shape()) +
                                " does not match output shape " + shape_str(root.shape()));
  }
  autograd::BackwardObserver* const observer = autograd::backward_observer();  // null unless one is set
  if (observer) observer->on_backward_begin();
  Tensor leaf = root;
  std::shared_ptr<Node> start = root.grad_fn() ? root.grad_fn() : autograd::grad_accumulator(leaf);

  // 1. Count, for every node reachable from the root, how many edges lead into it.
  std::unordered_map<Node*, int> pending;
  std::vector<Node*> stack{start.get()};
  pending[start.get()] = 0;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next_edges) {
      if (!next) continue;
      if (pending[next.get()]++ == 0) stack.push_back(next.get());
    }
  }

  // 2. Run a node once all its incoming gradients have arrived, summing them as they come,
  //    leaves first (take_next says why). Nodes are kept alive by `ready` and `leaves` while
  //    they run, since release() drops their edges.
  std::unordered_map<Node*, Tensor> grads{{start.get(), seed}};
  NodeStack ready{start}, leaves;
  while (!ready.empty() || !leaves.empty()) {
    std::shared_ptr<Node> node = take_next(ready, leaves);
    auto it = grads.find(node.get());
    std::vector<Tensor> input_grads;
    if (it != grads.end()) {  // no gradient reaches a node whose every input grad was undefined
      // Taken out of the map first: a gradient nobody else holds may then be adopted by a
      // leaf's AccumulateGrad instead of copied.
      const Tensor incoming = std::move(it->second);
      grads.erase(it);
      if (observer) observer->on_node_begin(*node);
      input_grads = node->apply(incoming);
      if (observer) observer->on_node_end(*node);
    }
    std::vector<std::shared_ptr<Node>> edges = std::move(node->next_edges);
    node->release();
    for (std::size_t i = 0; i < edges.size(); ++i) {
      Node* next = edges[i].get();
      if (!next) continue;
      if (i < input_grads.size() && input_grads[i].defined()) {
        Tensor& sum = grads[next];
        // Out of place: the first gradient may be shared with another branch.
        sum = sum.defined() ? kernels::add(sum, input_grads[i]) : input_grads[i];
      }
      if (--pending[next] == 0) (dynamic_cast<autograd::AccumulateGrad*>(next) ? leaves : ready).push_back(edges[i]);
    }
  }
  if (observer) observer->on_backward_end();
}

}  // namespace ringgrad
