// The flag a user meant: an argument that looks like a flag the program does not know is
// compared with each flag it does know by edit distance (Levenshtein: the fewest one-character
// insertions, deletions and substitutions), '-' and '_' taken alike, so that "--max-iter"
// finds "--max_iters". O(|a| |b|) per pair, over a program's few dozen flags.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace ringgrad::cli {

/// Levenshtein distance between a and b.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);  // row[j]: distance from a[0, i) to b[0, j)
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];  // distance from a[0, i-1) to b[0, j-1)
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

/// The long flag of `app` closest to `arg` ("--max_iters" for "--max-iter" or "--max-iter=5"),
/// or empty when arg does not look like a flag or no flag is within a third of its length
/// (at least 1 edit).
inline std::string closest_flag(const CLI::App& app, std::string_view arg) {
  auto normal = [](std::string_view s) {
    std::string n(s);
    std::replace(n.begin(), n.end(), '-', '_');
    return n;
  };
  const std::size_t dashes = arg.find_first_not_of('-');
  if (dashes == 0 || dashes == std::string_view::npos || std::isalpha(static_cast<unsigned char>(arg[dashes])) == 0)
    return {};  // not a flag ("5", "-0.5", "--")
  const std::string typed = normal(arg.substr(dashes, arg.find('=') - dashes));
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, typed.size() / 3) + 1;
  for (const CLI::Option* option : app.get_options())
    for (const std::string& name : option->get_lnames())
      if (const std::size_t d = edit_distance(typed, normal(name)); d < best_distance) {
        best_distance = d;
        best = "--" + name;
      }
  return best;
}

}  // namespace ringgrad::cli
