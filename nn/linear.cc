// Linear with PyTorch's initialisation (weight and bias uniform in +-1/sqrt(in_features)), ReLU,
// and Sequential, which calls each layer through operator() so module hooks run.
#include "nn/linear.h"

#include <cmath>
#include <string>

#include "autograd/linear.h"
#include "autograd/ops.h"
#include "tensor/random.h"

namespace ringgrad::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool with_bias, DType dtype) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  Tensor w = Tensor::zeros({out_features, in_features}, dtype);
  kernels::uniform_(w, -bound, bound);
  weight = register_parameter("weight", w);
  if (with_bias) {
    Tensor b = Tensor::zeros({out_features}, dtype);
    kernels::uniform_(b, -bound, bound);
    bias = register_parameter("bias", b);
  }
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Sequential::Sequential(std::vector<std::shared_ptr<Module>> layers) : layers_(std::move(layers)) {
  for (std::size_t i = 0; i < layers_.size(); ++i) register_module(std::to_string(i), layers_[i]);
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& layer : layers_) h = (*layer)(h);
  return h;
}

}  // namespace ringgrad::nn
