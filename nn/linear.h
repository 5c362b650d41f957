// Linear, ReLU and Sequential: the three pieces of a multilayer perceptron.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/module.h"

namespace ringgrad::nn {

/// y = x W^T + b. x: [..., in_features] -> y: [..., out_features]. W: [out, in], b: [out].
/// Initialised as PyTorch does: W, b ~ U(-1/sqrt(in), 1/sqrt(in)) from the default generator.
class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool with_bias = true, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x) override;

  Tensor weight;
  Tensor bias;  // undefined when built without bias
};

/// max(x, 0), element-wise.
class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

/// Runs its children in order, each on the previous one's output.
class Sequential : public Module {
 public:
  explicit Sequential(std::vector<std::shared_ptr<Module>> layers);
  Tensor forward(const Tensor& x) override;

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

}  // namespace ringgrad::nn
