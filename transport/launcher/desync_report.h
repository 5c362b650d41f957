// The desync report: from the flight-recorder dumps the ranks of a failed job wrote
// (collectives/flight_recorder.h; their format is trace/flight_record.h), which ranks wait in
// which collective and which never entered it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ringgrad::launcher {

/// From the dumps' JSON texts (only the world communicators' records count: of_world())
/// and what the launcher saw of some ranks (`fates`: rank -> "was stopped (SIGSTOP)", "was
/// killed by signal 9 (SIGKILL)"), e.g. "ranks 0, 2 were in all_reduce #4 (16 MiB); rank 1 was
/// stopped (SIGSTOP) after completing #3, before entering #4". Empty when there is nothing to say.
std::string desync_report(const std::vector<std::string>& dumps, const std::map<int, std::string>& fates = {});

/// Every *.json file in `dir`, read whole.
std::vector<std::string> read_dumps(const std::string& dir);

}  // namespace ringgrad::launcher
