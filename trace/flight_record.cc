// The flight record to and from JSON (nlohmann::json), field by field.
#include "trace/flight_record.h"

#include <algorithm>
#include <iterator>

#include <nlohmann/json.hpp>

namespace ringgrad::trace {
namespace {

constexpr CollectiveState kStates[] = {CollectiveState::kQueued, CollectiveState::kStarted, CollectiveState::kCompleted,
                                       CollectiveState::kFailed};

}  // namespace

std::string_view state_name(CollectiveState state) {
  switch (state) {
    case CollectiveState::kQueued: return "queued";
    case CollectiveState::kStarted: return "started";
    case CollectiveState::kCompleted: return "completed";
    case CollectiveState::kFailed: return "failed";
  }
  return "?";
}

bool FlightRecord::of_world() const { return who.find(" of group ") == std::string::npos; }

std::string to_json(const FlightRecord& record) {
  nlohmann::json j{{"rank", record.rank}, {"who", record.who}, {"entries", nlohmann::json::array()}};
  for (const FlightRecordEntry& e : record.entries)
    j["entries"].push_back({{"seq", e.seq}, {"kind", e.kind}, {"bytes", e.bytes}, {"dtype", e.dtype},
                            {"algo", e.algo}, {"state", state_name(e.state)}, {"queued_s", e.queued_s},
                            {"started_s", e.started_s}, {"ended_s", e.ended_s}});
  return j.dump();
}

std::optional<FlightRecord> parse_flight_record(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  try {
    FlightRecord record{j.at("rank").get<int>(), j.at("who").get<std::string>(), {}};
    for (const nlohmann::json& e : j.at("entries")) {
      FlightRecordEntry entry{e.at("seq").get<std::uint64_t>(), e.at("kind").get<std::string>(),
                              e.at("bytes").get<std::uint64_t>(), e.at("dtype").get<std::string>(),
                              e.at("algo").get<std::string>(), CollectiveState::kQueued,
                              e.at("queued_s").get<double>(), e.at("started_s").get<double>(),
                              e.at("ended_s").get<double>()};
      const std::string state = e.at("state").get<std::string>();
      const auto* known = std::find_if(std::begin(kStates), std::end(kStates),
                                       [&](CollectiveState s) { return state_name(s) == state; });
      if (known == std::end(kStates)) return std::nullopt;
      entry.state = *known;
      record.entries.push_back(std::move(entry));
    }
    return record;
  } catch (const nlohmann::json::exception&) {  // a field missing or of another type
    return std::nullopt;
  }
}

}  // namespace ringgrad::trace
