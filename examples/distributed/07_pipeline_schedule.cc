// 07: a GPT cut into pipeline stages, one per rank, trained under each schedule: GPipe's
// all-forward-all-backward, 1F1B, interleaved 1F1B (2 virtual stages per rank) and ZB-H1 (the
// backward split into B, the input gradients, and W, the weight gradients). For 2, 4 and 8
// micro-batches it prints who computed what when (F3 = forward of micro-batch 3, B3 its
// backward, W3 its weight gradients; lower case: the rank's second model chunk; repeated over
// the columns it lasted; '.' idle; one column per shortest slot, at most 60), the measured
// bubble (the share of the schedule's span each stage sat idle, averaged over stages; the
// median of 5 runs, the schedules taking turns) beside its formula, and how many micro-batches'
// activations each stage held at once: M for AFAB, S - s for 1F1B, S for ZB-H1, for interleaved
// chunks of 1/V of a stage's.
//
//   AFAB, 1F1B:   (S-1)/(M+S-1)
//   interleaved:  (S-1)/(V M+S-1)
//   ZB-H1:        (S-1)(T_F+T_B-T_W) / (M (T_F+T_B+T_W) + (S-1)(T_F+T_B-T_W)), = (S-1)/(3M+S-1) when
//                 the three passes take equal times (printed with the measured mean times too)
//
//   build/bin/ringgrad-run --nproc-per-node 2 build/bin/07_pipeline_schedule
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "examples/distributed/launch.h"
#include "nn/parallel/model_parallel/pipeline_schedule.h"
#include "tensor/random.h"

using namespace ringgrad;
using namespace ringgrad::nn::parallel;

namespace {

constexpr int kRuns = 5, kChunks = 2;
constexpr std::size_t kFields = 5;  // kind, micro-batch, chunk, start, end

const char* name_of(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kAllForwardAllBackward: return "AFAB";
    case PipelineSchedule::kOneForwardOneBackward: return "1F1B";
    case PipelineSchedule::kInterleaved1F1B: return "interleaved 1F1B (V 2)";
    case PipelineSchedule::kZeroBubbleH1: return "ZB-H1";
  }
  return "";
}

// One measured step, drawn on rank 0.
struct Measured {
  double bubble = 0, formula = 0;
  std::string drawing;
};

// A stage's events as doubles so rank 0 can gather them; -1 pads to `slots`.
std::vector<double> flatten(const PipelineStepResult& r, std::size_t slots) {
  std::vector<double> out(kFields * slots, -1);
  for (std::size_t i = 0; i < r.events.size() && i < slots; ++i) {
    const PipelineEvent& e = r.events[i];
    const double fields[kFields] = {e.kind == 'F' ? 0.0 : e.kind == 'B' ? 1.0 : 2.0, double(e.micro_batch),
                                    double(e.chunk), e.start_s, e.end_s};
    std::copy(fields, fields + kFields, out.begin() + static_cast<std::ptrdiff_t>(kFields * i));
  }
  out.push_back(static_cast<double>(r.peak_live_micro_batches));
  return out;
}

Measured measure(PipelineStage& stage, collectives::Communicator& pp, const Tensor& x, int m, PipelineSchedule schedule) {
  const int stages = pp.world_size();
  pipeline_step(stage, pp, x, x, m, schedule);  // warm-up: first-touch of every buffer
  stage.zero_grad();
  const PipelineStepResult r = pipeline_step(stage, pp, x, x, m, schedule);
  stage.zero_grad();
  const std::size_t slots = 4 * static_cast<std::size_t>(m);  // interleaved: 2 M V; ZB-H1: 3 M
  const std::vector<double> local = flatten(r, slots);
  std::vector<double> all(local.size() * static_cast<std::size_t>(stages));
  pp.all_gather(collectives::buffer(std::span<const double>(local)), collectives::buffer(std::span<double>(all)));
  Measured out;
  if (pp.rank() != 0) return out;
  const std::size_t per = local.size();
  auto event = [&](int s, std::size_t i) { return &all[static_cast<std::size_t>(s) * per + kFields * i]; };
  // The schedule's span: first slot's start to last slot's end over all stages (the formula's
  // subject; the step then sums the tied wte gradients and shares the loss).
  double t0 = 1e300, t1 = 0, shortest = 1e300, time_of[3] = {0, 0, 0}, count_of[3] = {0, 0, 0};
  for (int s = 0; s < stages; ++s)
    for (std::size_t i = 0; i < slots; ++i)
      if (const double* e = event(s, i); e[0] >= 0) {
        t0 = std::min(t0, e[3]), t1 = std::max(t1, e[4]), shortest = std::min(shortest, e[4] - e[3]);
        time_of[static_cast<int>(e[0])] += e[4] - e[3], count_of[static_cast<int>(e[0])] += 1;
      }
  const double column = std::max(shortest, (t1 - t0) / 60);  // at most 60 columns
  const auto columns = static_cast<std::size_t>(std::ceil((t1 - t0) / column));
  for (int s = 0; s < stages; ++s) {
    std::vector<std::string> line(columns, ".");
    double busy = 0;
    for (std::size_t i = 0; i < slots; ++i) {
      const double* e = event(s, i);
      if (e[0] < 0) continue;
      busy += e[4] - e[3];
      const char kind = "FBW"[static_cast<int>(e[0])];
      const std::string cell = fmt::format("{}{}", e[2] == 0 ? kind : static_cast<char>(kind - 'A' + 'a'), int(e[1]));
      const auto first = static_cast<std::size_t>(std::lround((e[3] - t0) / column));
      const auto last = std::max(first + 1, static_cast<std::size_t>(std::lround((e[4] - t0) / column)));
      for (std::size_t col = first; col < last && col < columns; ++col) line[col] = cell;
    }
    out.bubble += (1 - busy / (t1 - t0)) / stages;
    const int held = static_cast<int>(all[static_cast<std::size_t>(s) * per + per - 1]);
    std::string row;
    for (const auto& cell : line) row += fmt::format("{:>4}", cell);
    out.drawing += fmt::format("  stage {}:{}   idle {:4.1f}%, held {}\n", s, row, 100 * (1 - busy / (t1 - t0)), held);
  }
  const double S = stages, M = m;
  if (schedule == PipelineSchedule::kInterleaved1F1B) {
    out.formula = (S - 1) / (kChunks * M + S - 1);
  } else if (schedule == PipelineSchedule::kZeroBubbleH1) {
    out.formula = (S - 1) / (3 * M + S - 1);
    const double f = time_of[0] / count_of[0], b = time_of[1] / count_of[1], w = time_of[2] / count_of[2];
    const double idle = (S - 1) * std::max(0.0, f + b - w);
    out.drawing += fmt::format("  mean T_F {:.2f} ms, T_B {:.2f} ms, T_W {:.2f} ms: the general formula gives {:.1f}%\n",
                               f * 1e3, b * 1e3, w * 1e3, 100 * idle / (M * (f + b + w) + idle));
  } else {
    out.formula = (S - 1) / (M + S - 1);
  }
  return out;
}

}  // namespace

int main() try {
  collectives::Communicator pp(launch::job_or_exit("07_pipeline_schedule"));
  const int stages = pp.world_size(), stage = pp.rank();
  nn::GPTConfig c;
  c.n_layer = 2 * stages;
  c.n_head = 4;
  c.n_embd = 128;
  c.block_size = 64;
  c.vocab_size = 65;
  manual_seed(1);
  nn::GPT whole(c);
  PipelineStage mine(whole, stage, stages);
  PipelineStage chunked(whole, stage, stages, nullptr, nullptr, false, kChunks);  // blocks s and S + s
  if (stage == 0)
    fmt::print("{} stages of a GPT with {} layers (C {}, T {}), 2 blocks per stage (interleaved: 2 chunks of 1); "
               "batch 16\n", stages, c.n_layer, c.n_embd, c.block_size);
  Generator gen(7);
  std::vector<std::int64_t> ids(16 * 64);
  for (auto& id : ids) id = static_cast<std::int64_t>(gen.next_below(65));
  const Tensor x = Tensor::from_vector(ids, {16, 64});
  const std::vector<PipelineSchedule> schedules = {PipelineSchedule::kAllForwardAllBackward,
                                                   PipelineSchedule::kOneForwardOneBackward,
                                                   PipelineSchedule::kInterleaved1F1B, PipelineSchedule::kZeroBubbleH1};
  std::map<std::pair<int, int>, std::vector<Measured>> runs;  // (schedule, M) -> the runs
  for (int run = 0; run < kRuns; ++run)
    for (std::size_t k = 0; k < schedules.size(); ++k)
      for (int m : {2, 4, 8}) {
        PipelineStage& s = schedules[k] == PipelineSchedule::kInterleaved1F1B ? chunked : mine;
        runs[{static_cast<int>(k), m}].push_back(measure(s, pp, x, m, schedules[k]));
      }
  if (stage != 0) return 0;
  for (auto& [key, measured] : runs) {
    std::sort(measured.begin(), measured.end(), [](const Measured& a, const Measured& b) { return a.bubble < b.bubble; });
    const Measured& median = measured[measured.size() / 2];
    fmt::print("\n{} with {} micro-batches (the median run of {}):\n{}", name_of(schedules[static_cast<std::size_t>(key.first)]),
               key.second, kRuns, median.drawing);
    fmt::print("  bubble: measured {:.1f}% (runs {:.1f}% to {:.1f}%), formula {:.1f}%\n", 100 * median.bubble,
               100 * measured.front().bubble, 100 * measured.back().bubble, 100 * median.formula);
  }
} catch (const std::exception& e) {
  return launch::report("07_pipeline_schedule", e);
}
