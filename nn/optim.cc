// The optimizers' steps, each a loop over parameters that hands flat arrays to the per-element
// updates of optim_kernels.h (or their CUDA twins), and clip_grad_norm_ made of its two
// pieces: the squared norm of all gradients and one scaling of them.
#include "nn/optim.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "nn/optim_kernels.h"
#include "tensor/cpu_clones.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"
#include "tensor/view.h"

namespace ringgrad::nn {

// Built for AVX2 and the baseline: a square root and a division per element vectorise, and the
// AVX2 clone takes about half the baseline's time. An AVX-512 clone would buy nothing more: past
// AVX2 the loop waits on memory.
template <typename T>
RINGGRAD_CPU_CLONES void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const AdamStep& s) {
  const AdamCoefficients<T> c(s);
  for (std::int64_t i = 0; i < n; ++i) adam_step(p[i], g[i], m[i], v[i], c);
}
template void adam_update(float*, const float*, float*, float*, std::int64_t, const AdamStep&);
template void adam_update(double*, const double*, double*, double*, std::int64_t, const AdamStep&);

namespace {

// The parameter's gradient, contiguous and on the parameter's device.
Tensor checked_grad(const Tensor& p, const char* op) {
  const Tensor g = kernels::contiguous(p.grad());
  if (!p.is_contiguous()) throw std::invalid_argument(std::string(op) + ": parameters must be contiguous");
  if (g.device() != p.device() || g.numel() != p.numel() || g.dtype() != p.dtype()) {
    throw std::invalid_argument(std::string(op) + ": gradient " + dtype_name(g.dtype()) + " on " + g.device().str() +
                                " does not match its parameter, " + dtype_name(p.dtype()) + " on " + p.device().str());
  }
  return g;
}

// `slot` itself, zero-filled in the parameter's shape on its device on first use.
Tensor& lazily(Tensor& slot, const Tensor& param) {
  if (!slot.defined()) slot = Tensor::zeros(param.shape(), param.dtype(), param.device());
  return slot;
}

std::invalid_argument unknown_state(const char* op, const std::string& name) {
  return std::invalid_argument(std::string(op) + ": no optimizer state named '" + name + "'");
}

}  // namespace

Optimizer::Optimizer(std::vector<ParamGroup> groups, double lr) : groups_(std::move(groups)), lr_(lr) {}

void Optimizer::zero_grad() {
  for (auto& group : groups_) {
    for (Tensor p : group.params) p.set_grad(Tensor());
  }
}

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum)
    : Optimizer(std::move(groups), lr), momentum_(momentum) {
  for (auto& group : groups_) buffers_.emplace_back(group.params.size());
}

std::vector<std::string> SGD::state_names() const {
  return momentum_ != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
}

Tensor& SGD::state(std::size_t group, std::size_t index, const std::string& name) {
  if (name != "momentum_buffer") throw unknown_state("SGD", name);
  return lazily(buffers_.at(group).at(index), groups_[group].params[index]);
}

void SGD::step() {
  ++steps_;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      const Tensor& p = groups_[gi].params[pi];
      if (!p.grad().defined()) continue;
      const Tensor g = checked_grad(p, "SGD");
      Tensor& buf = lazily(buffers_[gi][pi], p);
      const double wd = groups_[gi].weight_decay;
      dispatch_floating(p.dtype(), "SGD", [&]<typename T>() {
#if RINGGRAD_HAVE_CUDA
        if (p.is_cuda()) {
          return cuda::sgd_update(p.data<T>(), g.data<T>(), buf.data<T>(), p.numel(), lr_, momentum_, wd,
                                  p.device().index);
        }
#endif
        sgd_update(p.data<T>(), g.data<T>(), buf.data<T>(), p.numel(), lr_, momentum_, wd);
      });
    }
  }
}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options, bool decoupled_weight_decay)
    : Optimizer(std::move(groups), options.lr), options_(options), decoupled_(decoupled_weight_decay) {
  for (auto& group : groups_) {
    exp_avg.emplace_back(group.params.size());
    exp_avg_sq.emplace_back(group.params.size());
  }
}

std::vector<std::string> Adam::state_names() const { return {"exp_avg", "exp_avg_sq"}; }

Tensor& Adam::state(std::size_t group, std::size_t index, const std::string& name) {
  const Tensor& param = groups_.at(group).params.at(index);
  if (name == "exp_avg") return lazily(exp_avg[group][index], param);
  if (name == "exp_avg_sq") return lazily(exp_avg_sq[group][index], param);
  throw unknown_state("Adam", name);
}

void Adam::step() {
  ++steps_;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const AdamStep s{lr_, options_.beta1, options_.beta2, options_.eps, groups_[gi].weight_decay, steps_, decoupled_};
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      const Tensor& p = groups_[gi].params[pi];
      if (!p.grad().defined()) continue;
      const Tensor g = checked_grad(p, "Adam");
      Tensor& m = lazily(exp_avg[gi][pi], p);
      Tensor& v = lazily(exp_avg_sq[gi][pi], p);
      dispatch_floating(p.dtype(), "Adam", [&]<typename T>() {
#if RINGGRAD_HAVE_CUDA
        if (p.is_cuda()) {
          return cuda::adam_update(p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(), p.numel(), s, p.device().index);
        }
#endif
        adam_update(p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(), p.numel(), s);
      });
    }
  }
}

double grad_norm_squared(const std::vector<Tensor>& params) {
  double total_sq = 0;
  // Sums of squares of the GPU gradients, added up on the GPU and read back once at the end:
  // one running sum per device and dtype (one in all, for a model on one GPU).
  std::vector<Tensor> gpu_sums;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.is_cuda()) {
      const Tensor sq = kernels::sum(kernels::mul(g, g));
      auto same = std::find_if(gpu_sums.begin(), gpu_sums.end(),
                               [&](const Tensor& s) { return s.device() == sq.device() && s.dtype() == sq.dtype(); });
      if (same == gpu_sums.end()) {
        gpu_sums.push_back(sq);
      } else {
        *same = kernels::add(*same, sq);
      }
      continue;
    }
    dispatch_floating(g.dtype(), "grad_norm_squared", [&]<typename T>() {
      // 8 partial sums: one chain of dependent adds would neither pipeline nor vectorise.
      const T* d = g.data<T>();
      const std::int64_t n = g.numel();
      double lane[8] = {};
      std::int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(d[i + l]) * d[i + l];
      }
      for (; i < n; ++i) total_sq += static_cast<double>(d[i]) * d[i];
      for (double s : lane) total_sq += s;
    });
  }
  for (const Tensor& sum : gpu_sums) total_sq += sum.item<double>();
  return total_sq;
}

void scale_grads_(const std::vector<Tensor>& params, double factor) {
  if (factor == 1) return;
  for (const Tensor& p : params) {
    if (p.grad().defined()) kernels::mul_(p.grad(), factor);
  }
}

double clip_coefficient(double total_norm, double max_norm) { return std::min(1.0, max_norm / (total_norm + 1e-6)); }

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  const double total = std::sqrt(grad_norm_squared(params));
  scale_grads_(params, clip_coefficient(total, max_norm));
  return total;
}

}  // namespace ringgrad::nn
