// Device names both ways: str() gives "cpu" or "cuda:N", parse() reads "cpu", "cuda" and
// "cuda:N" and throws for anything else.
#include "tensor/device.h"

#include <charconv>
#include <stdexcept>

namespace ringgrad {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device Device::parse(std::string_view name) {
  if (name == "cpu") return kCPU;
  if (name == "cuda") return cuda_device(0);
  if (name.starts_with("cuda:")) {
    const std::string_view digits = name.substr(5);
    int index = -1;
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (err == std::errc() && end == digits.data() + digits.size() && index >= 0) return cuda_device(index);
  }
  throw std::invalid_argument("unknown device '" + std::string(name) + "': expected cpu, cuda or cuda:N");
}

}  // namespace ringgrad
