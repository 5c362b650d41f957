// Checks for number flags. CLI11's own number checks let NaN through (no comparison holds for
// it) and print their bounds as 300-digit numbers ("Value 0 not in range 0.000000 to 1797..."
// for a count that must be positive): these take finite numbers only and say the range in words.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace ringgrad::cli {

/// A check that passes a finite number for which `ok` holds; `range` says which, as "> 0".
inline CLI::Validator finite(std::string range, bool (*ok)(double)) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        if (CLI::detail::lexical_cast(text, v) && std::isfinite(v) && ok(v)) return "";
        return text + " is not a number " + range;
      },
      "NUMBER " + range);
}

/// A check that passes a whole number >= `lo` (a count, a size, an interval).
inline CLI::Validator at_least(std::int64_t lo) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::int64_t v = 0;
        if (CLI::detail::lexical_cast(text, v) && v >= lo) return "";
        return text + " is not a whole number >= " + std::to_string(lo);
      },
      "INT >= " + std::to_string(lo));
}

inline const CLI::Validator kNonNegative = finite(">= 0", [](double v) { return v >= 0; });
inline const CLI::Validator kPositive = finite("> 0", [](double v) { return v > 0; });
inline const CLI::Validator kBelowOne = finite("in [0, 1)", [](double v) { return v >= 0 && v < 1; });

}  // namespace ringgrad::cli
