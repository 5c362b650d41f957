// CommStats' totals and its one-line description.
#include "collectives/comm_stats.h"

#include <fmt/format.h>

namespace ringgrad::collectives {

std::uint64_t CommStats::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [kind, e] : by_kind) total += e.bytes;
  return total;
}

std::string CommStats::describe() const {
  std::string out;
  for (const auto& [kind, e] : by_kind)
    out += fmt::format("{}{} {} call{} {:.2f} MB", out.empty() ? "" : ", ", coll_name(kind), e.calls,
                       e.calls == 1 ? "" : "s", static_cast<double>(e.bytes) / 1e6);
  return out.empty() ? "nothing" : out;
}

}  // namespace ringgrad::collectives
