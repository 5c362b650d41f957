// The desync report: from the flight-recorder dumps the ranks of a failed job wrote
// (collectives/flight_recorder.h: {"rank", "who", "entries": [{"seq", "kind", "bytes", "state",
// ...}]}), which ranks wait in which collective and which never entered it.
#pragma once

#include <string>
#include <vector>

namespace ringgrad::launcher {

/// From the dumps' JSON texts (only the world communicators' count: "who" without "of group"),
/// e.g. "ranks 0, 2 wait in all_reduce #4 (16 MiB); rank 1 completed #3 and has not entered #4".
/// Empty when there is nothing to say (no dumps, or every rank completed all it recorded).
std::string desync_report(const std::vector<std::string>& dumps);

/// Every *.json file in `dir`, read whole.
std::vector<std::string> read_dumps(const std::string& dir);

}  // namespace ringgrad::launcher
