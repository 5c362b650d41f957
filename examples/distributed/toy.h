// The toy problem the numbered examples share: classify 16 random features into 4 classes
// with a small MLP. Data is generated from a seed, so every process can make any batch.
#pragma once

#include <memory>
#include <utility>

#include "nn/linear.h"
#include "tensor/random.h"

namespace toy {

constexpr std::int64_t kFeatures = 16, kClasses = 4;

/// The same initial model in every process (seeded).
inline std::shared_ptr<ringgrad::nn::Sequential> make_model() {
  ringgrad::manual_seed(0);
  using namespace ringgrad::nn;
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(kFeatures, 64), std::make_shared<ReLU>(), std::make_shared<Linear>(64, 64),
      std::make_shared<ReLU>(), std::make_shared<Linear>(64, kClasses)});
}

/// Sample i of the data set: features ~ N(0, 1) and a label that depends on them.
inline std::pair<ringgrad::Tensor, ringgrad::Tensor> samples(const std::vector<std::int64_t>& indices) {
  using ringgrad::Tensor;
  const auto n = static_cast<std::int64_t>(indices.size());
  std::vector<float> x;
  std::vector<std::int64_t> y;
  for (std::int64_t i : indices) {
    ringgrad::Generator gen(1000 + static_cast<std::uint64_t>(i));
    float best = -1e9f;
    std::int64_t label = 0;
    for (std::int64_t f = 0; f < kFeatures; ++f) {
      x.push_back(static_cast<float>(gen.next_normal()));
      if (f < kClasses && x.back() > best) best = x.back(), label = f;  // the largest of the first 4
    }
    y.push_back(label);
  }
  return {Tensor::from_vector(x, {n, kFeatures}), Tensor::from_vector(y, {n})};
}

/// Indices [start, start + n).
inline std::vector<std::int64_t> range(std::int64_t start, std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(start + i);
  return v;
}

}  // namespace toy
