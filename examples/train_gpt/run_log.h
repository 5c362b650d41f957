// train_gpt's --log: the run as JSON lines (the config, progress, evaluations, the throughput),
// which scripts/plot_loss.sh and the comparisons read.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace ringgrad::examples {

/// --log: one JSON object per line, written by rank 0 only (the other ranks' writes do nothing);
/// a resumed run appends to the file, a fresh one starts it anew.
class RunLog {
 public:
  RunLog(const std::string& path, bool is_main_process, bool append) {
    if (!path.empty() && is_main_process) stream_.open(path, append ? std::ios::app : std::ios::trunc);
  }
  void write(const nlohmann::json& j) {
    if (stream_) stream_ << j.dump() << std::endl;
  }

 private:
  std::ofstream stream_;
};

}  // namespace ringgrad::examples
