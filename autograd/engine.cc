// backward() in two passes over the recorded graph: count the edges into every reachable node,
// then run each node once all of its incoming gradients are summed (Kahn's algorithm), releasing
// it as soon as it has run so activations are freed during backward.
#include "autograd/engine.h"

#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "autograd/node.h"
#include "autograd/trace.h"
#include "tensor/elementwise.h"

namespace ringgrad {

using autograd::Node;

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
  const trace::Span span("backward", "backward pass");
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

  // 2. Run a node once all its incoming gradients have arrived, summing them as they come.
  //    Nodes are kept alive by `ready` while they run, since release() drops their edges.
  //    A leaf's AccumulateGrad goes first, as PyTorch gives it the highest priority: taken from
  //    the stack in turn, it would wait behind every node pushed after it (for an op whose
  //    parameter is not its last input, the whole chain below), and the parameter's hooks (DDP
  //    starting a bucket) would run later than its gradient is complete.
  std::unordered_map<Node*, Tensor> grads{{start.get(), seed}};
  std::vector<std::shared_ptr<Node>> ready{start}, leaves;
  while (!ready.empty() || !leaves.empty()) {
    std::vector<std::shared_ptr<Node>>& from = leaves.empty() ? ready : leaves;
    std::shared_ptr<Node> node = std::move(from.back());
    from.pop_back();
    auto it = grads.find(node.get());
    std::vector<Tensor> input_grads;
    if (it != grads.end()) {  // no gradient reaches a node whose every input grad was undefined
      // Taken out of the map first: a gradient nobody else holds may then be adopted by a
      // leaf's AccumulateGrad instead of copied.
      const Tensor incoming = std::move(it->second);
      grads.erase(it);
      const double t0 = trace::enabled() ? trace::now_us() : 0;
      input_grads = node->apply(incoming);
      if (trace::enabled())  // named after the module that recorded it, or the op itself
        trace::record_backward(node->trace_module() ? node->trace_module() : trace::intern(node->name()), t0);
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
}

}  // namespace ringgrad
