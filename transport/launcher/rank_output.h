// A rank's output: the read end of its stdout or stderr pipe, passed on line by line with the
// rank's prefix ("[rank 1] "); a stderr line another rank already showed is held back
// (repeated_lines.h).
#pragma once

#include <string>
#include <string_view>

#include "transport/launcher/repeated_lines.h"

namespace ringgrad::launcher {

/// One output stream of one rank.
struct RankOutput {
  int fd = -1;      // read end of the pipe; -1 once closed
  int out = 1;      // where its lines go: 1 (stdout) or 2 (stderr)
  std::string partial;
  RepeatedLines* repeats = nullptr;  // stderr: lines another rank showed are held back
};

/// Writes all of `text` to `fd`, again after EINTR; stops at an error.
void write_all(int fd, std::string_view text);
/// Reads what is there (the pipe is non-blocking) and writes each complete line with the
/// prefix. Returns whether it read anything; closes the stream at EOF.
bool pump(RankOutput& s, int rank);
/// Reads what is left without waiting; a last line without a newline is passed on too.
void drain(RankOutput& s, int rank);

}  // namespace ringgrad::launcher
