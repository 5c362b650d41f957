#include "tensor/dropout.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ringgrad::kernels {

Tensor dropout_mask(const Shape& shape, double p, DType dtype, Generator& gen) {
  if (!(p >= 0 && p < 1)) throw std::invalid_argument(fmt::format("dropout: p must be in [0, 1), got {}", p));
  Tensor mask = Tensor::empty(shape, dtype);
  dispatch_floating(dtype, "dropout", [&]<typename T>() {
    T* m = mask.data<T>();
    const T keep = static_cast<T>(1 / (1 - p));
    for (std::int64_t i = 0; i < mask.numel(); ++i) m[i] = gen.next_double() < p ? T(0) : keep;
  });
  return mask;
}

}  // namespace ringgrad::kernels
