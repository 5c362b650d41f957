// Element types a Tensor can hold, and the switch that turns a runtime dtype into a C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ringgrad {

/// Element type of a tensor. float64 exists for gradient checks, int64 for indices and labels.
enum class DType : std::uint8_t { Float32, Float64, Int64 };

/// Bytes per element.
std::size_t dtype_size(DType dtype);

/// PyTorch's spelling: "float32", "float64", "int64".
std::string dtype_name(DType dtype);

/// The DType of a C++ element type, at compile time.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::Int64; }

/// Calls fn.template operator()<T>() with T the element type of `dtype` (float or double).
/// Throws std::invalid_argument naming `op` for int64, which floating-point math rejects.
template <typename Fn>
decltype(auto) dispatch_floating(DType dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    default: break;
  }
  throw std::invalid_argument(std::string(op) + ": expected a floating-point tensor, got " +
                              dtype_name(dtype));
}

/// As dispatch_floating, but int64 is accepted too.
template <typename Fn>
decltype(auto) dispatch_all(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn.template operator()<float>();
    case DType::Float64: return fn.template operator()<double>();
    case DType::Int64: return fn.template operator()<std::int64_t>();
  }
  throw std::logic_error("dispatch_all: unknown dtype");
}

}  // namespace ringgrad
