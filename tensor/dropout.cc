// The dropout mask on the CPU: element i is 1/(1-p) or 0 as the hash of (seed, offset + i)
// decides, so the GPU twin draws the same mask; the generator then advances by the mask's size.
#include "tensor/dropout.h"

#include <fmt/format.h>

#include <stdexcept>

#include "tensor/cuda_kernels.h"

namespace ringgrad::kernels {

Tensor dropout_mask(const Shape& shape, double p, DType dtype, Generator& gen, Device device) {
  if (!(p >= 0 && p < 1)) throw std::invalid_argument(fmt::format("dropout: p must be in [0, 1), got {}", p));
  RINGGRAD_ON_CUDA(device, cuda::dropout_mask(shape, p, dtype, gen, device));
  Tensor mask = Tensor::empty(shape, dtype, device);
  dispatch_floating(dtype, "dropout", [&]<typename T>() {
    T* m = mask.data<T>();
    const T keep = static_cast<T>(1 / (1 - p));
    const std::uint64_t first = gen.offset() + 1;
    for (std::int64_t i = 0; i < mask.numel(); ++i) {
      m[i] = dropout_mask_value(gen.seed(), first + static_cast<std::uint64_t>(i), p, keep);
    }
  });
  gen.set_offset(gen.offset() + static_cast<std::uint64_t>(mask.numel()));
  return mask;
}

}  // namespace ringgrad::kernels
