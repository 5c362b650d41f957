// The desync report: each rank's world communicator, where it got to, and the collective the
// job stuck in (the earliest one some rank did not complete).
#include "transport/launcher/desync_report.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trace/flight_record.h"

namespace ringgrad::launcher {
namespace {

using trace::CollectiveState;
using trace::FlightRecord;
using trace::FlightRecordEntry;

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{:g} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (1u << 10)) return fmt::format("{:g} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

}  // namespace

std::vector<std::string> read_dumps(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    out.push_back(text.str());
  }
  return out;
}

std::string desync_report(const std::vector<std::string>& dumps, const std::map<int, std::string>& fates) {
  // The world's recorder of each rank ("rank N", no group).
  std::map<int, std::vector<FlightRecordEntry>> by_rank;
  for (const std::string& text : dumps) {
    std::optional<FlightRecord> record = trace::parse_flight_record(text);
    if (!record || !record->of_world()) continue;
    // A rank with several world communicators (a tool that made two): the one used last speaks.
    auto last_used = [](const std::vector<FlightRecordEntry>& es) { return es.empty() ? 0.0 : es.back().queued_s; };
    auto& slot = by_rank[record->rank];
    if (slot.empty() || last_used(record->entries) > last_used(slot)) slot = std::move(record->entries);
  }
  auto fate = [&](int rank) { const auto it = fates.find(rank); return it == fates.end() ? std::string() : it->second; };
  if (by_rank.empty()) return "";
  // The collective the job stuck in: the earliest one some rank did not complete.
  std::uint64_t stuck = UINT64_MAX;
  for (const auto& [rank, entries] : by_rank) {
    std::uint64_t last = 0;
    bool any = false;
    for (const auto& e : entries) {
      if (e.state != CollectiveState::kCompleted) stuck = std::min(stuck, e.seq);
      last = e.seq, any = true;
    }
    if (any) stuck = std::min(stuck, last + 1);  // a rank that completed all it recorded stops before the next
  }
  if (stuck == UINT64_MAX) return "";
  // When the first rank failed. A rank that entered the collective only after that (a stopped
  // rank the launcher continued so it could write its record) had not entered it in time.
  double failed_at = 0;
  for (const auto& [rank, entries] : by_rank)
    for (const auto& e : entries)
      if (e.state == CollectiveState::kFailed && e.ended_s > 0)
        failed_at = failed_at == 0 ? e.ended_s : std::min(failed_at, e.ended_s);
  std::vector<int> waiting;
  std::string kind = "collective", size;
  std::vector<std::string> others;
  for (const auto& [rank, entries] : by_rank) {
    const FlightRecordEntry* here = nullptr;
    long long last_done = -1;
    for (const auto& e : entries) {
      if (e.seq == stuck && !(failed_at > 0 && e.queued_s > failed_at)) here = &e;
      if (e.state == CollectiveState::kCompleted) last_done = std::max(last_done, static_cast<long long>(e.seq));
    }
    const std::string seen = fate(rank);
    const bool entered = here != nullptr && here->state != CollectiveState::kCompleted;
    if (entered) {
      kind = here->kind;
      size = size_text(here->bytes);
    }
    const std::string done = last_done < 0 ? "completing no collective" : fmt::format("completing #{}", last_done);
    if (entered && seen.empty()) waiting.push_back(rank);
    else if (entered) others.push_back(fmt::format("rank {} {} inside it", rank, seen));
    else if (here == nullptr && !seen.empty())
      others.push_back(fmt::format("rank {} {} after {}, before entering #{}", rank, seen, done, stuck));
    else if (here == nullptr) others.push_back(fmt::format("rank {} stopped after {}, before entering #{}", rank, done, stuck));
    else if (!seen.empty()) others.push_back(fmt::format("rank {} {} after completing its part of #{}", rank, seen, stuck));
    else others.push_back(fmt::format("rank {} completed its part of #{}", rank, stuck));
  }
  // Ranks the launcher knows of that left no record (killed before they could write one).
  for (const auto& [rank, seen] : fates)
    if (!by_rank.contains(rank)) others.push_back(fmt::format("rank {} {} and left no record", rank, seen));
  std::string report;
  if (!waiting.empty())
    report = fmt::format("rank{} {} {} in {} #{}{}", waiting.size() > 1 ? "s" : "", fmt::join(waiting, ", "),
                         waiting.size() > 1 ? "were" : "was", kind, stuck, size.empty() ? "" : fmt::format(" ({})", size));
  for (const std::string& o : others) report += (report.empty() ? "" : "; ") + o;
  return report;
}

}  // namespace ringgrad::launcher
