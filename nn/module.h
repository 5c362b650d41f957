// Module: the base of every layer and model, as torch.nn.Module. It owns named parameters
// (leaf tensors that require grad), buffers (state that is saved but not trained) and child
// modules, so a whole model can be walked, saved, loaded and switched between train and eval.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/hooks.h"
#include "tensor/tensor.h"

namespace ringgrad::nn {

/// Name -> tensor, with dotted paths for nested modules ("blocks.0.attn.weight").
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using StateDict = std::map<std::string, Tensor>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The module's computation on one input.
  virtual Tensor forward(const Tensor& x) = 0;
  /// forward(x) with the registered hooks around it. Call modules this way (`(*block)(x)`)
  /// so that wrappers such as fully sharded data parallelism can act before and after.
  Tensor operator()(const Tensor& x);

  /// Runs before every call through operator() (torch's register_forward_pre_hook) until the
  /// returned handle removes it (autograd/hooks.h); hooks run in the order they were added.
  [[nodiscard]] autograd::RemovableHandle register_forward_pre_hook(std::function<void(Module&)> hook);
  /// Runs after every call through operator() and may replace the output
  /// (torch's register_forward_hook), until the returned handle removes it.
  [[nodiscard]] autograd::RemovableHandle register_forward_hook(std::function<Tensor(Module&, const Tensor& output)> hook);

  /// Names this module `name` and its children by their dotted paths under it (the names
  /// parameters carry: "h.0.attn") in traces (nn/module_trace.h), where their forward and
  /// backward spans appear; until then every module's spans read "module".
  void set_trace_names(const std::string& name = "model");

  /// Parameters of this module and its children, depth-first in registration order.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  NamedTensors named_buffers() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }

  /// Parameters and buffers by name: what a checkpoint holds.
  StateDict state_dict() const;
  /// Copies each tensor of `state` into the parameter or buffer of that name, in place (so
  /// optimizers holding the parameters keep working). With `strict`, a missing or unexpected
  /// name, or a shape or dtype that differs, throws std::invalid_argument naming it.
  void load_state_dict(const StateDict& state, bool strict = true);

  /// Training mode (dropout active) for this module and its children.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Resets every parameter's gradient to undefined (PyTorch's set_to_none=True).
  void zero_grad();

  /// Moves every parameter, gradient and buffer to `device` in place: the handles stay the same,
  /// so tied weights stay tied. Create the optimizer after this (its state follows the
  /// parameters' device). Throws std::runtime_error when the GPU is unusable.
  void to(Device device);

 protected:
  /// Registers a parameter (marks it requires_grad) and returns the handle to keep.
  Tensor register_parameter(std::string name, Tensor t);
  /// Registers a buffer: saved in state_dict, never trained.
  Tensor register_buffer(std::string name, Tensor t);
  /// Registers a child module and returns it.
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> child) {
    children_.emplace_back(std::move(name), child);
    return child;
  }
  /// Drops the child registered as `name` with its parameters (expert parallelism keeps only a
  /// rank's own experts). Throws std::invalid_argument when there is none of that name.
  void remove_module(const std::string& name);

 private:
  void collect(const std::string& prefix, NamedTensors& out, bool buffers) const;
  void name_children(const std::string& prefix);  // set_trace_names below this module

  // One entry per hook, a pre-hook or a hook (the other is empty). Shared with the handles
  // that remove them, so that a handle may outlive the module.
  struct ForwardHook {
    std::uint64_t id;
    std::function<void(Module&)> pre;
    std::function<Tensor(Module&, const Tensor&)> post;
  };
  std::shared_ptr<std::vector<ForwardHook>> hooks_ = std::make_shared<std::vector<ForwardHook>>();
  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  const char* trace_name_ = "module";  // set_trace_names
};

}  // namespace ringgrad::nn
