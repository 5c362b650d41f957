// The describer behind describe_tag: one atomic function pointer for the process.
#include "transport/tag_names.h"

#include <atomic>

#include <fmt/format.h>

namespace ringgrad::transport {
namespace {
std::atomic<std::string (*)(std::uint64_t)> describer{nullptr};
}

void set_tag_describer(std::string (*describe)(std::uint64_t tag)) { describer.store(describe); }

std::string describe_tag(std::uint64_t tag) {
  const auto describe = describer.load();
  return describe != nullptr ? describe(tag) : fmt::format("tag {}", tag);
}

}  // namespace ringgrad::transport
