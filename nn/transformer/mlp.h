// The transformer's position-wise feed-forward network: C -> 4C, GELU (tanh approximation,
// as GPT-2) or with GPTConfig::relu_squared ReLU(x)^2 (Primer, So et al. 2021), 4C -> C.
#pragma once

#include <memory>

#include "nn/linear.h"
#include "nn/transformer/config.h"

namespace ringgrad::nn {

/// x: [B, T, C] -> [B, T, C]. Children c_fc (C -> 4C) and c_proj (4C -> C); dropout on the
/// output in training mode.
class MLP : public Module {
 public:
  explicit MLP(const GPTConfig& config);
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<Linear> c_fc, c_proj;

  /// GELU of h, or (relu_squared) ReLU(h)^2: elementwise, so a tensor-parallel rank applies it
  /// to its slice of the hidden units.
  static Tensor activation(const Tensor& h, bool relu_squared);

 private:
  double dropout_;
  bool relu_squared_;
};

}  // namespace ringgrad::nn
