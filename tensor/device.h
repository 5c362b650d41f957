// Device: where a tensor's memory lives, the CPU or one CUDA GPU, named as PyTorch names them
// ("cpu", "cuda", "cuda:1").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringgrad {

enum class DeviceType : std::uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  /// CUDA device ordinal (0 for the CPU).
  int index = 0;

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  /// "cpu" or "cuda:N".
  std::string str() const;
  /// Parses "cpu", "cuda" (= cuda:0) or "cuda:N"; throws std::invalid_argument otherwise.
  static Device parse(std::string_view name);

  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCPU{};
inline constexpr Device cuda_device(int index = 0) { return Device{DeviceType::CUDA, index}; }

}  // namespace ringgrad
