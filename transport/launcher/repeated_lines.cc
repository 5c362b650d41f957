// RepeatedLines: a map from each stderr line to the rank that showed it first.
#include "transport/launcher/repeated_lines.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ringgrad::launcher {

bool RepeatedLines::show(std::string_view line, int rank) {
  const auto it = first_rank_.find(line);
  if (it == first_rank_.end()) {
    if (first_rank_.size() < kMaxRemembered) first_rank_.emplace(line, rank);
    return true;
  }
  if (it->second == rank) return true;
  held_back_for_.insert(rank);
  ++held_back_;
  return false;
}

std::string RepeatedLines::summary() const {
  if (held_back_ == 0) return "";
  return fmt::format("rank{} {} printed {} stderr line{} another rank had printed first; shown once",
                     held_back_for_.size() == 1 ? "" : "s", fmt::join(held_back_for_, ", "), held_back_,
                     held_back_ == 1 ? "" : "s");
}

}  // namespace ringgrad::launcher
