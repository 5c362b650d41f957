// Checks for number flags. CLI11's own number checks let NaN through (no comparison holds for
// it) and print their bounds as 300-digit numbers ("Value 0 not in range 0.000000 to 1797..."
// for a count that must be positive): these take finite numbers only and say the range in words.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>

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

namespace detail {
// Passes the digits of a whole number in [lo, hi] (from_chars: too many digits is out of
// range, not the largest value); `range` words those bounds, as ">= 1".
inline CLI::Validator whole(std::string range, std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::int64_t v = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (error == std::errc() && end == text.data() + text.size() && v >= lo && v <= hi) return "";
        if (error == std::errc::result_out_of_range) return text + " is out of range: need a whole number " + range;
        return text + " is not a whole number " + range;
      },
      "INT " + range);
}
}  // namespace detail

/// A check that passes a whole number >= `lo` (a count, a size, an interval).
inline CLI::Validator at_least(std::int64_t lo) { return detail::whole(">= " + std::to_string(lo), lo, INT64_MAX); }

/// A check that passes a whole number from `lo` to `hi` (a port, a rank count, a flag's 0 or 1).
inline CLI::Validator between(std::int64_t lo, std::int64_t hi) {
  return detail::whole("in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", lo, hi);
}

/// The largest size parse_bytes takes: 1 TiB (no host has more).
inline constexpr double kMaxBytes = 1099511627776.0;

/// A size in bytes: a number with an optional B, K, M or G (binary: K = 1024), from 0 to 1T.
/// Throws std::invalid_argument naming the text.
inline std::size_t parse_bytes(const std::string& s) {
  std::size_t pos = 0;
  double v = -1;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  const std::string unit = s.substr(pos);
  const double scale = unit.empty() || unit == "B" ? 1 : unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0 : -1;
  if (pos == 0 || scale < 0) throw std::invalid_argument("size '" + s + "': expected a number with an optional K, M or G");
  if (!(v >= 0 && v * scale <= kMaxBytes)) throw std::invalid_argument("size '" + s + "' is not between 0 and 1T");
  return static_cast<std::size_t>(v * scale);
}

inline const CLI::Validator kNonNegative = finite(">= 0", [](double v) { return v >= 0; });
inline const CLI::Validator kPositive = finite("> 0", [](double v) { return v > 0; });
inline const CLI::Validator kBelowOne = finite("in [0, 1)", [](double v) { return v >= 0 && v < 1; });
inline const CLI::Validator kZeroToOne = finite("in [0, 1]", [](double v) { return v >= 0 && v <= 1; });

}  // namespace ringgrad::cli
