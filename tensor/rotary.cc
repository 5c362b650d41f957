// Rotary embeddings on the fused qkv: one loop over batch, position, q-or-k, head and pair;
// the angles computed once per position and pair, in double.
#include "tensor/rotary.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tensor/dtype.h"
#include "tensor/view.h"

namespace ringgrad::kernels {

Tensor rotary(const Tensor& qkv, std::int64_t n_head, bool inverse, std::int64_t offset, double base) {
  if (qkv.dim() != 3 || qkv.size(2) % 3 != 0 || n_head < 1 || (qkv.size(2) / 3) % n_head != 0 ||
      (qkv.size(2) / 3 / n_head) % 2 != 0)
    throw std::invalid_argument(fmt::format("rotary: qkv {} does not split into q, k, v of {} heads of even size",
                                            shape_str(qkv.shape()), n_head));
  if (qkv.is_cuda()) throw std::invalid_argument("rotary: not built for GPU tensors yet");
  const std::int64_t batch = qkv.size(0), t_len = qkv.size(1), c = qkv.size(2) / 3, d = c / n_head, half = d / 2;
  std::vector<double> cos_t(static_cast<std::size_t>(t_len * half)), sin_t(cos_t.size());
  for (std::int64_t t = 0; t < t_len; ++t)
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(offset + t) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      cos_t[static_cast<std::size_t>(t * half + i)] = std::cos(angle);
      sin_t[static_cast<std::size_t>(t * half + i)] = (inverse ? -1 : 1) * std::sin(angle);
    }
  Tensor out = clone(contiguous(qkv));
  dispatch_floating(out.dtype(), "rotary", [&]<typename T>() {
    T* x = out.data<T>();
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t t = 0; t < t_len; ++t)
        for (std::int64_t part = 0; part < 2; ++part)  // q, then k; v stays
          for (std::int64_t h = 0; h < n_head; ++h) {
            T* head = x + (b * t_len + t) * 3 * c + part * c + h * d;
            for (std::int64_t i = 0; i < half; ++i) {
              const double cs = cos_t[static_cast<std::size_t>(t * half + i)], sn = sin_t[static_cast<std::size_t>(t * half + i)];
              const double x1 = head[i], x2 = head[i + half];
              head[i] = static_cast<T>(x1 * cs - x2 * sn);
              head[i + half] = static_cast<T>(x1 * sn + x2 * cs);
            }
          }
  });
  return out;
}

}  // namespace ringgrad::kernels
