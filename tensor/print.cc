// Tensor printing with PyTorch's layout: nested brackets, one width for every number, and over
// 1,000 elements only the first and last 3 of each dimension with "..." between.
#include "tensor/print.h"

#include <algorithm>
#include <vector>

#include "tensor/view.h"

namespace ringgrad {
namespace {

constexpr std::int64_t kSummarizeAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

struct Printer {
  const std::vector<double>& values;
  const Shape& shape;
  bool is_int;
  bool summarize;
  std::size_t width;

  std::string number(double v) const {
    return is_int ? fmt::format("{}", static_cast<std::int64_t>(v)) : fmt::format("{:.4f}", v);
  }

  // Prints the block of dimension `d` starting at flat position `start`.
  void block(std::string& out, std::size_t d, std::int64_t start, std::size_t indent) const {
    if (d == shape.size()) {
      out += fmt::format("{:>{}}", number(values[static_cast<std::size_t>(start)]), width);
      return;
    }
    const std::int64_t n = shape[d];
    const std::int64_t inner = numel(Shape(shape.begin() + static_cast<std::ptrdiff_t>(d) + 1, shape.end()));
    const std::string sep = d + 1 == shape.size() ? ", " : "," + std::string(shape.size() - d - 1, '\n') + std::string(indent + 1, ' ');
    out += '[';
    for (std::int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += "..." + sep;
        i = n - kEdgeItems;
      }
      block(out, d + 1, start + i * inner, indent + 1);
      if (i + 1 < n) out += sep;
    }
    out += ']';
  }
};

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const std::vector<double> values = t.to_vector<double>();  // copied from the GPU if need be
  const bool is_int = t.dtype() == DType::Int64;
  std::size_t width = 1;
  Printer p{values, t.shape(), is_int, t.numel() > kSummarizeAbove, 1};
  for (double v : values) width = std::max(width, p.number(v).size());
  p.width = width;
  std::string out = "tensor(";
  p.block(out, 0, 0, 7);
  // As PyTorch: the device when it is not the CPU, then the dtype when it is not the default.
  if (t.is_cuda()) out += ", device='" + t.device().str() + "'";
  if (t.dtype() != DType::Float32) out += ", dtype=" + dtype_name(t.dtype());
  return out + ")";
}

}  // namespace ringgrad
