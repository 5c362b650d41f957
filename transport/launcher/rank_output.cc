// A rank's output, line by line: what is read from its pipe is held until its newline, then
// written whole with the prefix, so the lines of ranks printing at once do not interleave.
#include "transport/launcher/rank_output.h"

#include <unistd.h>

#include <cerrno>
#include <utility>

#include <fmt/format.h>

namespace ringgrad::launcher {
namespace {

// The line with the rank's prefix, or nothing when it repeats another rank's stderr line.
std::string prefixed(const RankOutput& s, int rank, std::string_view line) {
  if (s.repeats != nullptr && !s.repeats->show(line, rank)) return "";
  return fmt::format("[rank {}] {}\n", rank, line);
}

// Longest piece of a rank's output held back waiting for its newline, in bytes.
constexpr size_t kMaxLine = 64 << 10;

}  // namespace

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

bool pump(RankOutput& s, int rank) {
  char buffer[65536];
  ssize_t n = ::read(s.fd, buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
  if (n > 0) s.partial.append(buffer, static_cast<size_t>(n));
  std::string lines;
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1)
    lines += prefixed(s, rank, std::string_view(s.partial).substr(start, nl - start));
  s.partial.erase(0, start);
  // At EOF the last piece goes out as a line; so does a piece that reaches kMaxLine, so a rank
  // that never ends its line (a progress bar redrawn with '\r') cannot grow this buffer forever.
  if ((n <= 0 || s.partial.size() >= kMaxLine) && !s.partial.empty()) {
    lines += prefixed(s, rank, std::exchange(s.partial, {}));
  }
  write_all(s.out, lines);
  if (n > 0) return true;
  ::close(s.fd);
  s.fd = -1;
  return false;
}

void drain(RankOutput& s, int rank) {
  while (s.fd >= 0 && pump(s, rank)) {
  }
  if (s.fd < 0) return;  // EOF: pump flushed and closed it
  if (!s.partial.empty()) write_all(s.out, prefixed(s, rank, std::exchange(s.partial, {})));
  ::close(s.fd);
  s.fd = -1;
}

}  // namespace ringgrad::launcher
