// Output paths checked before a program starts work: a run that trains for an hour and then
// cannot write its checkpoint or log has lost the hour.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace ringgrad::cli {

/// Why this process could not write the file at `path` (it is a directory, its directory does
/// not exist or is not writable, the file is not writable), or "" when it could. Creates and
/// changes nothing: a checkpoint not there yet must stay absent (--resume auto looks for it).
inline std::string why_unwritable(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::is_directory(file, ec)) return "is a directory, not a file";
  if (!fs::is_directory(dir, ec)) return "there is no directory " + dir.string();
  // Both: a checkpoint is written beside the file and renamed over it, a log appended to it.
  if (::access(dir.c_str(), W_OK) != 0) return "its directory " + dir.string() + " is not writable";
  if (fs::exists(file, ec) && ::access(path.c_str(), W_OK) != 0) return "the file is not writable";
  return "";
}

}  // namespace ringgrad::cli
