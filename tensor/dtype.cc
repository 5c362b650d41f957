// Sizes and names of the dtypes ("float32", "float64", "int64"), as PyTorch prints them.
#include "tensor/dtype.h"

namespace ringgrad {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
  }
  throw std::logic_error("dtype_size: unknown dtype");
}

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
  }
  throw std::logic_error("dtype_name: unknown dtype");
}

}  // namespace ringgrad
