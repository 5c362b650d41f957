// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 28x28 grey images of clothing in 10 classes,
// 60,000 for training and 10,000 for testing, as shipped by Debian's dataset-fashion-mnist.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace ringgrad::nn::data {

struct ImageDataset {
  Tensor images;  // float32 [N, 784], pixels / 255 normalised by the training set's mean, std
  Tensor labels;  // int64 [N], classes 0..9
  std::int64_t size() const { return labels.numel(); }
};

/// Mean and standard deviation of the training pixels (after / 255), as torchvision uses them.
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;

/// Loads the train ("train-*") or test ("t10k-*") split from `dir` (files *-idx3-ubyte.gz and
/// *-idx1-ubyte.gz). Throws DataError for missing or corrupt files, or images and labels
/// whose counts differ.
ImageDataset load_fashion_mnist(const std::string& dir, bool train);

}  // namespace ringgrad::nn::data
