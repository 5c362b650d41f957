// How every ringgrad program reads its command line: CLI11, with the exit statuses the launcher
// relies on. --help exits 0; a parse error prints CLI11's message and exits 2, a usage error
// (CLI11's own statuses are 100-120), which ringgrad-run does not restart: a restart would only
// repeat it.
#pragma once

#include <optional>

#include <CLI/CLI.hpp>

namespace ringgrad::cli {

/// The status a usage error exits with, in every program (as argparse and getopt tools do).
inline constexpr int kUsageError = 2;

/// Parses argv into `app`. Returns nullopt when the program goes on, else the status main()
/// returns: 0 after --help, kUsageError after a parse error (its message already printed).
inline std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kUsageError;
  }
}

}  // namespace ringgrad::cli
