// checkpoint(): the forward under NoGradGuard, then one graph node whose backward replays the
// region with the graph recorded (the random state restored around it) and backpropagates
// through the replay with a nested backward() call, PyTorch's re-entrant checkpoint.
#include "autograd/checkpoint.h"

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "tensor/random.h"

namespace ringgrad {
namespace {

// Sets the default generator (dropout's) to `state` for a scope, then puts back the one it
// replaced, so the replay draws the forward's masks and later draws are as if it never ran.
class GeneratorReplay {
 public:
  explicit GeneratorReplay(const Generator& state) : saved_(default_generator()) { default_generator() = state; }
  ~GeneratorReplay() { default_generator() = saved_; }
  GeneratorReplay(const GeneratorReplay&) = delete;
  GeneratorReplay& operator=(const GeneratorReplay&) = delete;

 private:
  Generator saved_;
};

}  // namespace

Tensor checkpoint(const Region& region, const std::vector<Tensor>& inputs) {
  bool any = false;
  for (const Tensor& t : inputs) any |= t.defined() && t.requires_grad();
  if (!GradMode::is_enabled() || !any) return region(inputs);

  const Generator forward_state = default_generator();
  Tensor out;
  {
    NoGradGuard no_grad;
    // Detached: a region may return one of its inputs, whose history must stay its own.
    out = region(inputs).detach();
  }
  // What the node keeps: the inputs' data, without their history.
  std::vector<Tensor> saved;
  std::vector<bool> needs_grad;
  for (const Tensor& t : inputs) {
    saved.push_back(t.defined() ? t.detach() : t);
    needs_grad.push_back(t.defined() && t.requires_grad());
  }
  return autograd::record(
      "checkpoint", out, inputs, [region, saved, needs_grad, forward_state](const Tensor& grad_output) {
        std::vector<Tensor> leaves;
        for (std::size_t i = 0; i < saved.size(); ++i) {
          Tensor leaf = saved[i].defined() ? saved[i].detach() : saved[i];
          if (needs_grad[i]) leaf.set_requires_grad(true);
          leaves.push_back(leaf);
        }
        Tensor replay;
        {
          EnableGradGuard grad_on;  // a backward may be run under NoGradGuard
          GeneratorReplay rng(forward_state);
          replay = region(leaves);
        }
        backward(replay, grad_output);
        std::vector<Tensor> grads;
        for (std::size_t i = 0; i < leaves.size(); ++i) grads.push_back(needs_grad[i] ? leaves[i].grad() : Tensor());
        return grads;
      });
}

}  // namespace ringgrad
