// LayerNorm over the last dimension with a learned scale and optional shift (Ba et al. 2016),
// as torch.nn.LayerNorm(C, bias=...).
#pragma once

#include <cstdint>

#include "nn/module.h"

namespace ringgrad::nn {

/// x: [..., C] -> [..., C]. weight [C] starts at 1, bias [C] at 0 (absent when !with_bias).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::int64_t channels, bool with_bias = true, double eps = 1e-5, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x) override;

  Tensor weight;
  Tensor bias;  // undefined without bias

 private:
  double eps_;
};

}  // namespace ringgrad::nn
