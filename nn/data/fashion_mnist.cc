// Loading Fashion-MNIST from its IDX files: images and labels checked against each other, pixels
// scaled to [0, 1] and normalised by the training set's mean and standard deviation.
#include "nn/data/fashion_mnist.h"

#include <fmt/format.h>

#include "nn/data/idx.h"

namespace ringgrad::nn::data {

ImageDataset load_fashion_mnist(const std::string& dir, bool train) {
  const std::string prefix = dir + (train ? "/train" : "/t10k");
  const IdxArray images = read_idx(prefix + "-images-idx3-ubyte.gz");
  const IdxArray labels = read_idx(prefix + "-labels-idx1-ubyte.gz");
  if (images.shape.size() != 3 || labels.shape.size() != 1 || images.shape[0] != labels.shape[0]) {
    throw DataError(fmt::format("{}: images and labels do not match ({} images of rank {}, {} labels)", prefix,
                                images.shape.empty() ? 0 : images.shape[0], images.shape.size(),
                                labels.shape.empty() ? 0 : labels.shape[0]));
  }
  const std::int64_t n = images.shape[0], pixels = images.shape[1] * images.shape[2];
  ImageDataset ds{Tensor::zeros({n, pixels}), Tensor::zeros({n}, DType::Int64)};
  float* x = ds.images.data<float>();
  for (std::size_t i = 0; i < images.data.size(); ++i) {
    x[i] = static_cast<float>((images.data[i] / 255.0 - kFashionMnistMean) / kFashionMnistStd);
  }
  std::int64_t* y = ds.labels.data<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t label = labels.data[static_cast<std::size_t>(i)];
    if (label > 9) throw DataError(fmt::format("{}: label {} of sample {} is not a class 0-9", prefix, label, i));
    y[i] = label;
  }
  return ds;
}

}  // namespace ringgrad::nn::data
