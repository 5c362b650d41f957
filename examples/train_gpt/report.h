// What train_gpt prints about the run: the model and the split of the work before training, a
// progress line every log_interval, and after training the throughput (tokens/s, TFLOP/s as
// nanoGPT's estimate_mfu counts FLOPs), each rank's communication wait, and the memory held.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "examples/train_gpt/run.h"

namespace ringgrad::examples {

/// The middle value (the upper of the two middle ones for an even count, as bench/train_bench).
double median(std::vector<double> v);

/// Logs the run's whole config, then prints the model's size and the data, the strategy, the batch
/// split, the device and the optimizer.
void print_run_header(Run& run);

/// The wall-clock time of the training steps (evaluations excluded) and the part of it the
/// data-parallel strategy spent waiting on communication.
class StepTimes {
 public:
  /// At the start of a step.
  void begin(const nn::parallel::DataParallel& dp);
  /// At its end: records the step and returns its time in ms.
  double end(const nn::parallel::DataParallel& dp);

  std::vector<double> step_ms;
  double seconds = 0, comm_wait_seconds = 0;  // summed over the steps
  const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();  // of the loop

 private:
  std::chrono::steady_clock::time_point step_start_;
  double wait_at_start_ = 0;
};

/// Collective: the progress line of iteration `it` (the loss averaged over the ranks) and its log.
void log_progress(Run& run, std::int64_t it, double loss_sum, double lr, double grad_norm, double ms,
                  const StepTimes& times);

/// Collective: iterations, tokens/s (mean and median step), TFLOP/s, and each rank's share of the
/// step time spent waiting on communication.
void report_throughput(Run& run, const StepTimes& times);

/// Rank 0's parameters, gradients and optimizer state, and the peak memory (RSS, or the GPU's).
void report_memory(Run& run);

}  // namespace ringgrad::examples
