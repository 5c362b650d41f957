// The graph autograd records: each op's output points at a Node, each Node at the nodes that
// produced its inputs. backward() walks it from the loss to the leaves.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::autograd {

/// One recorded operation with one output. apply() maps the gradient of the output to one
/// gradient per input (undefined where an input needs none). next_edges[i] is where input
/// i's gradient goes: the node that produced it, a leaf's AccumulateGrad, or null.
class Node {
 public:
  explicit Node(std::string name);
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  /// Drops saved tensors and edges once backward has used them: the graph frees itself.
  virtual void release() { next_edges.clear(); }
  const std::string& name() const { return name_; }
  /// The order this thread made nodes in (0, 1, 2, ...; PyTorch's sequence_nr): an observer of
  /// backward (autograd/backward_observer.h) links a node to the forward code that recorded it
  /// by comparing it with next_sequence_nr() taken while that code ran.
  std::uint64_t sequence_nr() const { return sequence_nr_; }

  std::vector<std::shared_ptr<Node>> next_edges;

 private:
  std::string name_;
  std::uint64_t sequence_nr_;
};

/// The sequence_nr() the next node made on this thread will have.
std::uint64_t next_sequence_nr();

/// Backward of a differentiable op: grad of the output -> grads of the inputs.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

/// A node whose backward is a closure holding the tensors the op saved.
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFn backward) : Node(std::move(name)), backward_(std::move(backward)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  void release() override;

 private:
  BackwardFn backward_;
};

/// The sink of a leaf tensor: adds the incoming gradient into leaf.grad(), then runs the
/// leaf's post-accumulate-grad hooks (autograd/hooks.h). The engine calls it once per backward pass, after every
/// contribution to the leaf has been summed.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf) : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(const Tensor& grad) override;

 private:
  Tensor leaf_;
};

/// The AccumulateGrad node of `leaf` in the graph being recorded (created on first use).
std::shared_ptr<Node> grad_accumulator(Tensor& leaf);

/// Attaches `out` to the graph: when grad mode is on and an input requires grad, `out` gets a
/// FunctionNode named `name` running `backward`, with one edge per input. Returns `out`.
/// `backward` must capture detached tensors (see Tensor::detach), never `out` itself.
Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn backward);

}  // namespace ringgrad::autograd
