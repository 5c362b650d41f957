// train_bench: times GPT training steps (forward, backward, clip, AdamW) of a preset and
// prints ms/iter, tokens/s, peak RSS and where the time goes by op kind. Compare with
// PyTorch on the same machine: /usr/bin/python3 bench/compare/torch_gpt.py --data ... --steps 200.
//
//   train_bench --config baby --iters 100 --threads 1
//   train_bench --config baby --iters 200 --trace_cost    # what recording a timeline costs
//   train_bench --config shakespeare-char --device cuda --dtype bf16
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/numbers.h"
#include "cli/parse.h"
#include "nn/data/char_dataset.h"
#include "nn/data/idx.h"  // DataError
#include "nn/module_trace.h"
#include "nn/transformer/train_config.h"
#include "nn/transformer/train_step.h"
#include "tensor/cuda_runtime.h"
#include "tensor/op_profile.h"
#include "tensor/precision.h"
#include "tensor/threads.h"
#include "trace/trace.h"

using namespace ringgrad;

namespace {

// Peak memory in MiB: the caching allocator's high-water mark on a GPU, else the peak RSS.
double peak_mib(Device device) {
  if (device.is_cuda()) return static_cast<double>(cuda::memory_stats(device.index).peak_allocated) / (1 << 20);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// The corpus to draw batches from: the file when it exists, else a seeded random text
// (the step time depends on the shapes only).
nn::data::CharDataset corpus(const std::string& path) {
  if (std::filesystem::is_regular_file(path)) return nn::data::CharDataset::from_file(path);
  fmt::print("# {} not found: using random text with a 65-character vocabulary\n", path);
  std::string text(200000, ' ');
  Generator gen(0);
  for (char& ch : text) ch = static_cast<char>(' ' + gen.next_below(65));
  return nn::data::CharDataset(text);
}

struct Options {
  std::string preset = "baby", data_path = "data/tinyshakespeare.txt", device_name = "cpu", dtype = "fp32";
  int iters = 100, warmup = 10, threads = 1;
  bool trace_cost = false;
};

// Times the steps and prints the tables. Throws DataError for a corpus it cannot use.
int bench(const Options& o, nn::TrainConfig cfg, Device device) {
  const std::string& preset = o.preset;
  const std::string& dtype = o.dtype;
  const int iters = o.iters, warmup = o.warmup, threads = o.threads;
  const bool trace_cost = o.trace_cost;
  const nn::data::CharDataset ds = corpus(o.data_path);
  cfg.model.vocab_size = ds.vocab_size();
  manual_seed(cfg.seed);
  nn::GPT model(cfg.model);
  model.to(device);  // before the optimizer, which makes its state where the parameters are
  nn::AdamW opt(nn::weight_decay_groups(model, cfg.weight_decay), {cfg.lr, cfg.beta1, cfg.beta2, 1e-8});
  Generator gen(cfg.seed);

  std::vector<double> ms, traced_ms, untraced_ms;
  double total_s = 0;
  std::size_t events = 0;
  if (trace_cost) model.set_trace_names();
  for (int it = 0; it < warmup + iters; ++it) {
    if (it == warmup) {
      profile::reset();
      profile::set_enabled(true);
    }
    const bool traced = trace_cost && it >= warmup && it % 2 == 1;  // steps interleaved: the same drift for both
    if (traced) nn::start_tracing();
    const auto t0 = std::chrono::steady_clock::now();
    const auto batch = ds.get_batch(nn::data::Split::Train, cfg.batch_size, cfg.model.block_size, gen);
    nn::train_step(model, opt, batch, cfg.lr_at(it), cfg.grad_clip);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (traced) {
      nn::stop_tracing();
      events += trace::take().size();
    }
    if (it >= warmup) {
      ms.push_back(s * 1e3);
      (traced ? traced_ms : untraced_ms).push_back(s * 1e3);
      total_s += s;
    }
  }
  profile::set_enabled(false);
  if (trace_cost && !traced_ms.empty() && !untraced_ms.empty()) {
    auto median_of = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double on = median_of(traced_ms), off = median_of(untraced_ms);
    fmt::print("tracing: median step {:.2f} ms traced ({} steps, {} spans each) against {:.2f} ms not: {:+.1f}%\n", on,
               traced_ms.size(), events / traced_ms.size(), off, 100 * (on / off - 1));
  }

  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double tokens = static_cast<double>(cfg.batch_size * cfg.model.block_size);
  fmt::print("config {}: n_layer {} n_head {} n_embd {} block {} batch {} vocab {}, threads {}, {} with {} matmuls\n",
             preset, cfg.model.n_layer, cfg.model.n_head, cfg.model.n_embd, cfg.model.block_size, cfg.batch_size,
             cfg.model.vocab_size, threads, device.str(), dtype);
  fmt::print("{} steps: median {:.2f} ms/iter (p10 {:.2f}, p90 {:.2f}), {:.0f} tokens/s, peak {} {:.1f} MiB\n",
             iters, median, sorted[sorted.size() / 10], sorted[sorted.size() * 9 / 10], tokens / median * 1e3,
             device.is_cpu() ? "RSS" : "GPU memory", peak_mib(device));
  fmt::print("{:<12} {:>10} {:>7}\n", "op kind", "ms/iter", "share");
  double charged = 0;
  auto row = [&](const char* name, double seconds) {
    fmt::print("{:<12} {:>10.2f} {:>6.1f}%\n", name, seconds / iters * 1e3, 100 * seconds / total_s);
  };
  for (int k = 0; k < profile::kOpKinds; ++k) {
    const auto kind = static_cast<profile::OpKind>(k);
    row(profile::op_kind_name(kind), profile::seconds(kind));
    charged += profile::seconds(kind);
  }
  row("other", total_s - charged);
  row("total", total_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Time GPT training steps and break the time down by op kind"};
  app.add_option("--config", o.preset, "Preset: baby, shakespeare-char, speedrun or tiny")->capture_default_str();
  app.add_option("--data", o.data_path, "Text corpus (random text when missing)")->capture_default_str();
  app.add_option("--iters", o.iters, "Timed steps, 1 or more")->check(ringgrad::cli::at_least(1))->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed steps first, 0 or more")
      ->check(ringgrad::cli::at_least(0))->capture_default_str();
  app.add_option("--threads", o.threads, "BLAS threads, 1 or more")->check(ringgrad::cli::at_least(1))->capture_default_str();
  app.add_option("--device", o.device_name, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--dtype", o.dtype, "Matmul precision: fp32 or bf16")->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_flag("--trace_cost", o.trace_cost, "Record every other timed step's timeline (nn/module_trace.h) and compare the "
                                             "two halves' median step: what tracing costs");
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;

  Device device;
  try {
    device = Device::parse(o.device_name);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "train_bench: --device: {}\n", e.what());
    return 2;
  }
  nn::TrainConfig cfg;
  try {
    cfg = nn::train_preset(o.preset);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "train_bench: --config: {}\n", e.what());
    return 2;
  }
  if (cfg.optimizer != "adamw") {
    fmt::print(stderr, "train_bench: --config {} trains with --optimizer {}; this benchmark times AdamW steps "
                       "(time that preset with train_gpt, which prints its median step)\n", o.preset, cfg.optimizer);
    return 2;
  }
  if (device.is_cuda() && device.index >= cuda::device_count()) {
    fmt::print(stderr, "train_bench: {} is not visible ({} GPUs; {})\n", device.str(), cuda::device_count(),
               cuda::device_count() == 0 ? cuda::unavailable_reason() : "choose another index");
    return 1;
  }
  set_matmul_precision(parse_matmul_precision(o.dtype));
  try {
    set_num_threads(o.threads);
    return bench(o, cfg, device);
  } catch (const nn::data::DataError& e) {  // a --data file that is empty, unreadable or too short
    fmt::print(stderr, "train_bench: --data: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // a bad RINGGRAD_ONEDNN
    fmt::print(stderr, "train_bench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // out of memory, a CUDA error
    fmt::print(stderr, "train_bench: {}\n", e.what());
    return 1;
  }
}
