// Error lines every rank prints alike (a configuration error each rank finds for itself, such
// as a batch that does not divide by the world size) are shown once: the launcher passes a
// rank's stderr line on unless another rank already showed the very same text, and says at the
// end which ranks it held back for. A rank repeating its own line is shown each time.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

namespace ringgrad::launcher {

class RepeatedLines {
 public:
  /// Whether `line` (without its rank prefix) from `rank` should be shown.
  bool show(std::string_view line, int rank);
  /// "ranks 1, 2 printed 1 stderr line another rank had printed; it was shown once", or "" when
  /// nothing was held back.
  std::string summary() const;

 private:
  static constexpr std::size_t kMaxRemembered = 1000;  // distinct lines kept; past that, all are shown
  std::map<std::string, int, std::less<>> first_rank_;
  std::set<int> held_back_for_;
  std::size_t held_back_ = 0;
};

}  // namespace ringgrad::launcher
