// The numbers train_gpt reports about its run, printed on rank 0 and written to --log.
#include "examples/train_gpt/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "examples/train_gpt/optimizer.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "tensor/precision.h"

namespace ringgrad::examples {
namespace {

// Training FLOPs per token as nanoGPT's estimate_mfu counts them (PaLM, Chowdhery et al. 2022,
// appendix B): 6 N for the forward and backward of the N weights that take part in matmuls,
// plus 12 L C T for the attention scores and their use (QK^T and att V, forward and backward,
// counted over the full T x T square as nanoGPT does, not the causal half). N leaves out the
// position table and, when lm_head is untied, the token table: lookups do no arithmetic.
double flops_per_token(const nn::GPTConfig& c, std::int64_t n_params) {
  const std::int64_t lookups = (c.rotary ? 0 : c.block_size * c.n_embd) + (c.tie_weights ? 0 : c.vocab_size * c.n_embd);
  return 6.0 * static_cast<double>(n_params - lookups) +
         12.0 * static_cast<double>(c.n_layer * c.n_embd * c.block_size);
}

double tokens_per_iter(const nn::TrainConfig& cfg) { return static_cast<double>(cfg.batch_size * cfg.model.block_size); }

}  // namespace

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void print_run_header(Run& run) {
  const nn::TrainConfig& cfg = run.cfg;
  const Distributed& dist = run.opt.dist;
  run.log.write({{"config", nlohmann::json::parse(nn::train_config_json(cfg))}, {"world_size", run.acc.world_size()}});
  run.acc.print("GPT {} layers, {} heads, C {}, T {}, V {}: {} parameters ({}); {} iters; {} train / {} val tokens\n",
                cfg.model.n_layer, cfg.model.n_head, cfg.model.n_embd, cfg.model.block_size, cfg.model.vocab_size,
                run.layout.parameter_count(), cfg.model.tie_weights ? "lm_head tied to wte" : "lm_head untied",
                cfg.max_iters, run.ds.size(nn::data::Split::Train), run.ds.size(nn::data::Split::Val));
  run.acc.print("strategy {}; on {} with {} matmuls; {}, {} schedule\n", run.layout.describe(), run.device.str(),
                matmul_precision_name(matmul_precision()), describe_optimizer(cfg, dist), cfg.lr_schedule);
}

void StepTimes::begin(const nn::parallel::DataParallel& dp) {
  step_start_ = std::chrono::steady_clock::now();
  wait_at_start_ = dp.stats().wait_seconds;
}

double StepTimes::end(const nn::parallel::DataParallel& dp) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start_).count();
  seconds += ms / 1e3;
  step_ms.push_back(ms);
  comm_wait_seconds += dp.stats().wait_seconds - wait_at_start_;
  return ms;
}

void log_progress(Run& run, std::int64_t it, double loss_sum, double lr, double grad_norm, double ms,
                  const StepTimes& times) {
  const double loss = run.acc.mean(loss_sum);
  const double comm_share = times.comm_wait_seconds / times.seconds;
  const double peak_mib = nn::parallel::peak_memory_mib(run.device);
  const double tokens = tokens_per_iter(run.cfg);
  run.acc.print("iter {:5d}: loss {:.4f}, lr {:.2e}, {:.1f} ms/iter, {:.0f} tokens/s, comm wait {:.1f}%, peak {:.0f} MiB\n",
                it, loss, lr, ms, tokens / ms * 1e3, 100 * comm_share, peak_mib);
  run.log.write({{"iter", it}, {"loss", loss}, {"lr", lr}, {"grad_norm", grad_norm}, {"ms", ms},
                 {"tokens_per_s", tokens / ms * 1e3}, {"comm_wait_share", comm_share},
                 {run.device.is_cpu() ? "peak_rss_mib" : "peak_gpu_mib", peak_mib}});
}

void report_throughput(Run& run, const StepTimes& times) {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - times.start).count();
  if (times.step_ms.empty()) {
    run.acc.print("trained 0 iterations\n");  // a resume at max_iters only evaluates
    return;
  }
  // The loss's item() each step waits for the GPU, so the step times are the GPU's times.
  const double tokens = tokens_per_iter(run.cfg);
  const double tokens_per_s = tokens * static_cast<double>(times.step_ms.size()) / times.seconds;
  // The median step beside the mean: on a shared machine a few stalled steps move the mean,
  // not the median (the PyTorch twin and bench/train_bench report the median).
  const double median_ms = median(times.step_ms);
  const double flops = flops_per_token(run.cfg.model, run.layout.parameter_count());
  const double tflops = tokens_per_s * flops / 1e12;
  run.acc.print("trained {} iterations in {:.1f} s of steps ({:.1f} s wall): {:.0f} tokens/s (median step {:.2f} ms: "
                "{:.0f} tokens/s), {:.3g} TFLOP/s ({:.3g} GFLOP per token: 6 N + 12 L C T, nanoGPT's estimate_mfu)\n",
                times.step_ms.size(), times.seconds, wall, tokens_per_s, median_ms, tokens / median_ms * 1e3, tflops,
                flops / 1e9);
  run.log.write({{"trained_iters", times.step_ms.size()}, {"tokens_per_s", tokens_per_s}, {"tflops", tflops},
                 {"median_step_ms", median_ms}});
  // Every step ends when the slowest rank ends: the ranks' waits differ by how often each was
  // the one waited for.
  std::vector<std::string> waits;
  for (double w : run.acc.gather(times.comm_wait_seconds / times.seconds)) waits.push_back(fmt::format("{:.1f}%", 100 * w));
  if (run.acc.world_size() > 1) run.acc.print("comm wait by rank: {}\n", fmt::join(waits, ", "));
}

void report_memory(Run& run) {
  const auto use = nn::parallel::memory_use(run.dp);  // measured before evaluation, with this step's gradients held
  constexpr double kMiB = 1 << 20;
  run.acc.print("model state on rank 0: parameters {:.2f} MiB, gradients {:.2f} MiB, optimizer {:.2f} MiB; peak {} {:.0f} MiB\n",
                use.params / kMiB, use.grads / kMiB, use.optimizer / kMiB, run.device.is_cpu() ? "RSS" : "GPU memory",
                nn::parallel::peak_memory_mib(run.device));
}

}  // namespace ringgrad::examples
