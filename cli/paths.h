// Paths checked before a program starts work: a run that trains for an hour and then cannot
// write its checkpoint or log has lost the hour, and one that cannot read its input should say
// why at once.
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

/// Why this process could not read the file at `path` (it is not there, is a directory or not a
/// regular file, or may not be read), or "" when it could.
inline std::string why_unreadable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return "no such file";
  if (fs::is_directory(status)) return "is a directory, not a file";
  if (!fs::is_regular_file(status)) return "not a regular file (a device, pipe or socket)";
  if (::access(path.c_str(), R_OK) != 0) return "the file is not readable";
  return "";
}

}  // namespace ringgrad::cli
