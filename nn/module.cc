// Module's walks over its tree of children (dotted names, parameters, buffers, state dicts,
// train/eval, moving to a device) and the forward hooks run around operator().
#include "nn/module.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "nn/module_trace.h"
#include "tensor/view.h"
#include "trace/trace.h"

namespace ringgrad::nn {

Tensor Module::operator()(const Tensor& x) {
  const ModuleScope scope(trace_name_);  // nothing unless tracing (nn/module_trace.h)
  const std::vector<ForwardHook> hooks = *hooks_;  // a copy: a hook may add or remove hooks
  for (const ForwardHook& h : hooks) {
    if (h.pre) h.pre(*this);
  }
  Tensor y = forward(x);
  for (const ForwardHook& h : hooks) {
    if (h.post) y = h.post(*this, y);
  }
  return y;
}

void Module::set_trace_names(const std::string& name) {
  trace_name_ = trace::intern(name);
  name_children("");
}

void Module::name_children(const std::string& prefix) {
  for (auto& [child_name, child] : children_) {
    const std::string path = prefix.empty() ? child_name : prefix + "." + child_name;
    child->trace_name_ = trace::intern(path);
    child->name_children(path);
  }
}

autograd::RemovableHandle Module::register_forward_pre_hook(std::function<void(Module&)> hook) {
  return autograd::add_hook(hooks_, ForwardHook{0, std::move(hook), nullptr});
}

autograd::RemovableHandle Module::register_forward_hook(std::function<Tensor(Module&, const Tensor&)> hook) {
  return autograd::add_hook(hooks_, ForwardHook{0, nullptr, std::move(hook)});
}

Tensor Module::register_parameter(std::string name, Tensor t) {
  t.set_requires_grad(true);
  parameters_.emplace_back(std::move(name), t);
  return t;
}

Tensor Module::register_buffer(std::string name, Tensor t) {
  buffers_.emplace_back(std::move(name), t);
  return t;
}

void Module::collect(const std::string& prefix, NamedTensors& out, bool buffers) const {
  for (const auto& [name, t] : buffers ? buffers_ : parameters_) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out, buffers);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", out, false);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", out, true);
  return out;
}

StateDict Module::state_dict() const {
  StateDict state;
  for (auto& [name, t] : named_parameters()) state.emplace(name, t);
  for (auto& [name, t] : named_buffers()) state.emplace(name, t);
  return state;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  std::set<std::string> used;
  for (auto& [name, t] : state_dict()) {
    auto it = state.find(name);
    if (it == state.end()) {
      if (strict) throw std::invalid_argument("load_state_dict: missing key '" + name + "'");
      continue;
    }
    const Tensor& src = it->second;
    if (src.shape() != t.shape() || src.dtype() != t.dtype()) {
      throw std::invalid_argument(fmt::format("load_state_dict: '{}' is {} {} in the checkpoint, {} {} in the model",
                                              name, dtype_name(src.dtype()), shape_str(src.shape()),
                                              dtype_name(t.dtype()), shape_str(t.shape())));
    }
    kernels::copy_(t, src);
    used.insert(name);
  }
  if (strict) {
    for (auto& [name, t] : state) {
      if (!used.count(name)) throw std::invalid_argument("load_state_dict: unexpected key '" + name + "'");
    }
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::remove_module(const std::string& name) {
  const auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  if (it == children_.end()) throw std::invalid_argument(fmt::format("Module::remove_module: no child named {}", name));
  children_.erase(it);
}

void Module::zero_grad() {
  for (Tensor p : parameters()) p.set_grad(Tensor());
}

void Module::to(Device device) {
  // Moving each storage in place (not each handle) keeps every view of it, tied weights included.
  for (const Tensor& p : parameters()) {
    p.storage()->move_to(device);
    if (p.grad().defined()) p.grad().storage()->move_to(device);
  }
  for (const auto& [name, b] : named_buffers()) b.storage()->move_to(device);
}

}  // namespace ringgrad::nn
