// How every ringgrad program reads its command line: CLI11, with the exit statuses the launcher
// relies on. --help exits 0; a parse error prints CLI11's message and exits 2, a usage error
// (CLI11's own statuses are 100-120), which ringgrad-run does not restart: a restart would only
// repeat it. A flag the program does not know gets the closest one it does (cli/suggest.h).
#pragma once

#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/suggest.h"

namespace ringgrad::cli {

/// The status a usage error exits with, in every program (as argparse and getopt tools do).
inline constexpr int kUsageError = 2;

/// Parses argv into `app`. Returns nullopt when the program goes on, else the status main()
/// returns: 0 after --help, kUsageError after a parse error (its message already printed, with
/// "--max-iter: did you mean --max_iters?" for each unknown flag close to a known one).
inline std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ExtrasError& e) {
    app.exit(e);
    for (const std::string& arg : app.remaining())
      if (const std::string flag = closest_flag(app, arg); !flag.empty())
        std::cerr << arg << ": did you mean " << flag << "?\n";
    return kUsageError;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kUsageError;
  }
}

}  // namespace ringgrad::cli
