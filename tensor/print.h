// Printing tensors the way PyTorch does: tensor([[1.0000, 2.0000], ...], dtype=float64).
#pragma once

#include <fmt/format.h>

#include <ostream>
#include <string>

#include "tensor/tensor.h"

namespace ringgrad {

/// PyTorch-style text of `t`: 4 decimals, nested brackets, dtype when not float32, and
/// "..." past 6 entries per dimension once the tensor has more than 1000 elements.
std::string to_string(const Tensor& t);

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace ringgrad

template <>
struct fmt::formatter<ringgrad::Tensor> : fmt::formatter<std::string> {
  template <typename Ctx>
  auto format(const ringgrad::Tensor& t, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(ringgrad::to_string(t), ctx);
  }
};
