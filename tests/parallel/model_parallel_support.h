// What the model-parallel tests compare with: the largest difference of two tensors, and the
// piece of a whole GPT parameter a rank of a tensor-parallel group should hold, written out
// from docs/model_parallel.md's layout (not taken from the library under test).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "tensor/tensor.h"
#include "tensor/view.h"

namespace ringgrad::test {

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = kernels::contiguous(a.detach()).to_vector<double>(), y = kernels::contiguous(b.detach()).to_vector<double>();
  if (x.size() != y.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// This rank's 1/p slice of t along dim.
inline Tensor slice(const Tensor& t, std::int64_t dim, const collectives::Communicator& group) {
  const std::int64_t n = t.size(dim) / group.world_size();
  return kernels::narrow(t.detach(), dim, group.rank() * n, n);
}

// This rank's piece of a whole GPT parameter, as docs/model_parallel.md lays them out (written
// out here, not taken from the library): dim 0 slices of each of q, k, v for c_attn, of c_fc
// and of the padded wte; dim 1 slices of the c_proj weights; everything else whole.
inline Tensor expected_piece(const std::string& name, const Tensor& whole, const collectives::Communicator& group) {
  const std::int64_t p = group.world_size(), r = group.rank();
  auto rows = [&](const Tensor& t, int parts) {
    const std::int64_t part = t.size(0) / parts, n = part / p;
    std::vector<double> out;
    const auto all = kernels::contiguous(t.detach()).to_vector<double>();
    const std::int64_t width = t.numel() / t.size(0);
    for (int i = 0; i < parts; ++i)
      out.insert(out.end(), all.begin() + (i * part + r * n) * width, all.begin() + (i * part + r * n + n) * width);
    Shape shape = t.shape();
    shape[0] = n * parts;
    return Tensor::from_vector(out, shape);
  };
  if (name == "wte.weight" || name == "lm_head.weight") {
    Tensor padded = Tensor::zeros({(whole.size(0) + p - 1) / p * p, whole.size(1)}, DType::Float64);
    kernels::copy_(kernels::narrow(padded, 0, 0, whole.size(0)), whole.detach());
    return rows(padded, 1);
  }
  if (name.find("c_attn") != std::string::npos) return rows(whole, 3);
  if (name.find("c_fc") != std::string::npos) return rows(whole, 1);
  if (name.ends_with("c_proj.weight")) return slice(whole, 1, group);
  return whole.detach();
}

}  // namespace ringgrad::test
