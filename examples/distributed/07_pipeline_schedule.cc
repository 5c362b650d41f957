// 07: a GPT cut into pipeline stages, one per rank, trained with GPipe's all-forward-all-backward
// and with 1F1B. For each schedule and 2, 4 and 8 micro-batches it prints who computed what
// when (F3 = forward of micro-batch 3, B3 its backward, repeated over the columns it lasted;
// '.' idle; one column per shortest slot, about a forward), the measured bubble (the share of the step each stage sat idle, averaged over
// stages) beside the formula (S-1)/(M+S-1), and how many micro-batches' activations each stage
// held at once: M for AFAB, S - s for 1F1B.
//
//   build/bin/ringgrad-run --nproc-per-node 2 build/bin/07_pipeline_schedule
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "examples/distributed/launch.h"
#include "nn/parallel/model_parallel/pipeline_schedule.h"
#include "tensor/random.h"

using namespace ringgrad;
using namespace ringgrad::nn::parallel;

namespace {

// A stage's events as doubles (kind, micro-batch, start, end) so rank 0 can gather them.
std::vector<double> flatten(const PipelineStepResult& r, std::size_t slots) {
  std::vector<double> out(4 * slots, -1);
  for (std::size_t i = 0; i < r.events.size() && i < slots; ++i) {
    const PipelineEvent& e = r.events[i];
    out[4 * i] = e.kind == 'F' ? 0 : 1;
    out[4 * i + 1] = e.micro_batch;
    out[4 * i + 2] = e.start_s;
    out[4 * i + 3] = e.end_s;
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
  if (stage == 0)
    fmt::print("{} stages of a GPT with {} layers (C {}, T {}), 2 blocks per stage; batch 16\n", stages, c.n_layer,
               c.n_embd, c.block_size);
  Generator gen(7);
  std::vector<std::int64_t> ids(16 * 64);
  for (auto& id : ids) id = static_cast<std::int64_t>(gen.next_below(65));
  const Tensor x = Tensor::from_vector(ids, {16, 64}), y = x;
  for (PipelineSchedule schedule : {PipelineSchedule::kAllForwardAllBackward, PipelineSchedule::kOneForwardOneBackward}) {
    for (int m : {2, 4, 8}) {
      pipeline_step(mine, pp, x, y, m, schedule);  // warm-up: first-touch of every buffer
      mine.zero_grad();
      const PipelineStepResult r = pipeline_step(mine, pp, x, y, m, schedule);
      mine.zero_grad();
      // Every stage's events and span to rank 0 (one clock on one host: steady_clock).
      const std::size_t slots = 2 * static_cast<std::size_t>(m);
      std::vector<double> local = flatten(r, slots), all(local.size() * static_cast<std::size_t>(stages));
      local.push_back(r.start_s);
      local.push_back(r.end_s);
      all.resize(local.size() * static_cast<std::size_t>(stages));
      pp.all_gather(collectives::buffer(std::span<const double>(local)), collectives::buffer(std::span<double>(all)));
      double held = static_cast<double>(r.peak_live_micro_batches);
      std::vector<double> helds(static_cast<std::size_t>(stages));
      pp.all_gather(collectives::buffer(std::span<const double>(&held, 1)), collectives::buffer(std::span<double>(helds)));
      if (stage != 0) continue;
      const std::size_t per = local.size();
      // The schedule's span: first forward's start to last backward's end over all stages (the
      // formula's subject); the step then sums the tied wte gradients and shares the loss.
      double t0 = 1e300, t1 = 0, step_end = 0, slot = 1e300;
      for (int s = 0; s < stages; ++s) {
        step_end = std::max(step_end, all[s * per + 4 * slots + 1]);
        for (std::size_t i = 0; i < slots; ++i) {
          t0 = std::min(t0, all[s * per + 4 * i + 2]);
          t1 = std::max(t1, all[s * per + 4 * i + 3]);
          slot = std::min(slot, all[s * per + 4 * i + 3] - all[s * per + 4 * i + 2]);
        }
      }
      const auto columns = static_cast<std::size_t>(std::ceil((t1 - t0) / slot));
      double bubble = 0;
      fmt::print("\n{} with {} micro-batches: schedule {:.1f} ms, then {:.1f} ms for the tied gradients and the loss\n",
                 schedule == PipelineSchedule::kAllForwardAllBackward ? "AFAB" : "1F1B", m, (t1 - t0) * 1e3,
                 (step_end - t1) * 1e3);
      for (int s = 0; s < stages; ++s) {
        std::vector<std::string> line(columns, " .");
        double busy = 0;
        for (std::size_t i = 0; i < slots; ++i) {
          const double* e = &all[s * per + 4 * i];
          busy += e[3] - e[2];
          const auto first = static_cast<std::size_t>(std::lround((e[2] - t0) / slot));
          const auto last = std::max(first + 1, static_cast<std::size_t>(std::lround((e[3] - t0) / slot)));
          for (std::size_t col = first; col < last && col < columns; ++col)
            line[col] = fmt::format("{}{}", e[0] == 0 ? 'F' : 'B', static_cast<int>(e[1]));
        }
        bubble += 1 - busy / (t1 - t0);
        std::string row;
        for (const auto& cell : line) row += fmt::format("{:>3}", cell);
        const int held_here = static_cast<int>(helds[static_cast<std::size_t>(s)]);
        fmt::print("  stage {}:{}   idle {:4.1f}%, held {} micro-batch{}\n", s, row, 100 * (1 - busy / (t1 - t0)), held_here,
                   held_here == 1 ? "" : "es");
      }
      fmt::print("  bubble: measured {:.1f}%, (S-1)/(M+S-1) = {:.1f}%\n", 100 * bubble / stages,
                 100.0 * (stages - 1) / (m + stages - 1));
    }
  }
} catch (const std::exception& e) {
  return launch::report("07_pipeline_schedule", e);
}
