// The fused layer norm kernels on the CPU: per row of C channels, mean and 1/std in one pass and
// the output in a second; the backward uses the saved statistics, not the input's again.
#include "tensor/layer_norm.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "tensor/cpu_clones.h"
#include "tensor/cuda_kernels.h"
#include "tensor/lanes.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

void check_param(const Tensor& p, const Tensor& x, const char* what) {
  if (p.dim() != 1 || p.size(0) != x.size(-1) || p.dtype() != x.dtype()) {
    throw std::invalid_argument(fmt::format("layer_norm: {} must be {} [{}], got {} {}", what,
                                            dtype_name(x.dtype()), x.size(-1), dtype_name(p.dtype()),
                                            shape_str(p.shape())));
  }
}

void check_device(const Tensor& p, const Tensor& x, const char* op) {
#if RINGGRAD_HAVE_CUDA
  if (p.defined()) cuda::check_same_device(op, x, p);
#else
  static_cast<void>(p), static_cast<void>(x), static_cast<void>(op);
#endif
}

std::int64_t rows_of(const Tensor& x) { return x.size(-1) == 0 ? 0 : x.numel() / x.size(-1); }

// The forward rows: y = (x - mean) * rstd * w + b over `rows` rows of c; b may be null.
template <typename T>
RINGGRAD_CPU_CLONES void layer_norm_rows(const T* x, const T* pw, const T* pb, T* y, T* mean, T* rstd,
                                         std::int64_t rows, std::int64_t c, T eps) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * c;
    T* yr = y + r * c;
    const T mu = sum_lanes<T>(c, [&](std::int64_t i) { return xr[i]; }) / static_cast<T>(c);
    // Two passes: the sum of squared deviations does not cancel catastrophically.
    const T sq = sum_lanes<T>(c, [&](std::int64_t i) { return (xr[i] - mu) * (xr[i] - mu); });
    const T rs = 1 / std::sqrt(sq / static_cast<T>(c) + eps);
    for (std::int64_t i = 0; i < c; ++i) yr[i] = (xr[i] - mu) * rs * pw[i];
    if (pb) {
      for (std::int64_t i = 0; i < c; ++i) yr[i] += pb[i];
    }
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// The backward rows: dx, and dw (and db when not null) accumulated.
template <typename T>
RINGGRAD_CPU_CLONES void layer_norm_backward_rows(const T* dy, const T* x, const T* pw, const T* mean, const T* rstd,
                                                  T* dx, T* dw, T* db, std::int64_t rows, std::int64_t c) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * c;
    const T* dyr = dy + r * c;
    T* dxr = dx + r * c;
    const T mu = mean[r], rs = rstd[r];
    // The two row means the input gradient needs, then the parameter gradients.
    const T mean_g = sum_lanes<T>(c, [&](std::int64_t i) { return dyr[i] * pw[i]; }) / static_cast<T>(c);
    const T mean_gx =
        sum_lanes<T>(c, [&](std::int64_t i) { return dyr[i] * pw[i] * (xr[i] - mu) * rs; }) / static_cast<T>(c);
    for (std::int64_t i = 0; i < c; ++i) dw[i] += dyr[i] * (xr[i] - mu) * rs;
    if (db) {
      for (std::int64_t i = 0; i < c; ++i) db[i] += dyr[i];
    }
    for (std::int64_t i = 0; i < c; ++i) {
      const T xhat = (xr[i] - mu) * rs;
      dxr[i] = rs * (dyr[i] * pw[i] - mean_g - xhat * mean_gx);
    }
  }
}

// The forward pass into `out`; x, w, b contiguous (b may be undefined).
void layer_norm_into(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const LayerNormOutput& out) {
  RINGGRAD_ON_CUDA(x, cuda::layer_norm(x, w, b, eps, out.y, out.mean, out.rstd));
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    layer_norm_rows<T>(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr, out.y.data<T>(),
                       out.mean.data<T>(), out.rstd.data<T>(), rows_of(x), x.size(-1), static_cast<T>(eps));
  });
}

// The backward pass into `g` (dweight and dbias zero-filled); every input contiguous.
void layer_norm_backward_into(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean,
                              const Tensor& rstd, const LayerNormGrads& g) {
  RINGGRAD_ON_CUDA(x, cuda::layer_norm_backward(dy, x, w, mean, rstd, g.dx, g.dweight, g.dbias));
  dispatch_floating(x.dtype(), "layer_norm_backward", [&]<typename T>() {
    layer_norm_backward_rows<T>(dy.data<T>(), x.data<T>(), w.data<T>(), mean.data<T>(), rstd.data<T>(), g.dx.data<T>(),
                                g.dweight.data<T>(), g.dbias.defined() ? g.dbias.data<T>() : nullptr, rows_of(x),
                                x.size(-1));
  });
}

}  // namespace

LayerNormOutput layer_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias, double eps) {
  if (x_in.dim() < 1) throw std::invalid_argument("layer_norm: input needs at least one dimension");
  check_param(weight, x_in, "weight");
  if (bias.defined()) check_param(bias, x_in, "bias");
  check_device(weight, x_in, "layer_norm");
  check_device(bias, x_in, "layer_norm");
  const Tensor x = contiguous(x_in);
  const Device device = x.device();
  const std::int64_t rows = rows_of(x);
  LayerNormOutput out{Tensor::empty(x.shape(), x.dtype(), device), Tensor::empty({rows}, x.dtype(), device),
                      Tensor::empty({rows}, x.dtype(), device)};
  layer_norm_into(x, contiguous(weight), bias.defined() ? contiguous(bias) : Tensor(), eps, out);
  return out;
}

LayerNormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd, bool has_bias) {
  for (const Tensor* t : {&dy, &weight, &mean, &rstd}) check_device(*t, x, "layer_norm_backward");
  const Device device = x.device();
  const std::int64_t c = x.size(-1);
  LayerNormGrads g{Tensor::empty(x.shape(), x.dtype(), device), Tensor::zeros({c}, x.dtype(), device),
                   has_bias ? Tensor::zeros({c}, x.dtype(), device) : Tensor()};
  layer_norm_backward_into(contiguous(dy), contiguous(x), contiguous(weight), contiguous(mean), contiguous(rstd), g);
  return g;
}

}  // namespace ringgrad::kernels
