// The flight record's format: what a communicator's flight recorder writes when a job fails
// (collectives/flight_recorder.h) and what the launcher's desync report reads
// (transport/launcher/desync_report.h), one JSON object per communicator:
//   {"rank": 1, "who": "rank 1", "entries": [{"seq": 20, "kind": "all_reduce", "bytes": 1048576,
//     "dtype": "float32", "algo": "ring", "state": "started", "queued_s": ..., "started_s": ...,
//     "ended_s": 0}, ...]}
// Both sides use this header, so the field names live here only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringgrad::trace {

/// How far a collective got.
enum class CollectiveState : std::uint8_t { kQueued, kStarted, kCompleted, kFailed };

/// "queued", "started", "completed", "failed".
std::string_view state_name(CollectiveState state);

/// One collective of a communicator, as the record keeps it.
struct FlightRecordEntry {
  std::uint64_t seq = 0;  // the communicator's sequence number: 0, 1, 2, ...
  std::string kind;       // "all_reduce", ... (collectives/algo.h: coll_name)
  std::uint64_t bytes = 0;  // nccl-tests' size
  std::string dtype, algo;  // "float32", "ring", ...
  CollectiveState state = CollectiveState::kQueued;
  double queued_s = 0, started_s = 0, ended_s = 0;  // steady-clock seconds; 0 until reached
};

/// One communicator's record: its job rank, who it is ("rank 1" for the world, "rank 0 of group
/// tp (...)" for a group: collectives/group.h), and its last collectives, oldest first.
struct FlightRecord {
  int rank = 0;
  std::string who;
  std::vector<FlightRecordEntry> entries;

  /// Whether it is a world communicator's record (`who` does not say "of group").
  bool of_world() const;
};

/// The record as one line of JSON.
std::string to_json(const FlightRecord& record);
/// The record in `text`, or nullopt when `text` is not one (not JSON, a field missing or of
/// another type, an unknown state).
std::optional<FlightRecord> parse_flight_record(std::string_view text);

}  // namespace ringgrad::trace
