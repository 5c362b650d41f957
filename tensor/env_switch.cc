// env_switch: one parser for the library's on/off environment variables.
#include "tensor/env_switch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ringgrad::kernels {

bool env_switch(const char* name, const char* off, const char* on) {
  const char* value = std::getenv(name);
  if (value == nullptr || std::strcmp(value, "1") == 0) return true;
  if (std::strcmp(value, "0") == 0) return false;
  throw std::invalid_argument(fmt::format("{}={}: must be 0 ({}) or 1 ({})", name, value, off, on));
}

}  // namespace ringgrad::kernels
