// train_mlp: a multilayer perceptron on Fashion-MNIST, on one process or many. The whole
// training loop is in train(): forward, loss, backward, step; evaluation after each epoch.
//
//   train_mlp --data /usr/share/datasets/fashion-mnist --epochs 3 --batch-size 64 --hidden 256
//   ringgrad-run --nproc-per-node 2 train_mlp --batch-size 128 --strategy ddp
//   train_mlp --device cuda --dtype bf16     # on a GPU, matmuls with bf16 operands
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "cli/numbers.h"
#include "cli/parse.h"
#include "cli/paths.h"
#include "collectives/collective_error.h"
#include "nn/data/fashion_mnist.h"
#include "nn/data/idx.h"
#include "nn/data/loader.h"
#include "nn/linear.h"
#include "nn/lr_schedule.h"
#include "nn/optim.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/timeline.h"
#include "tensor/elementwise.h"
#include "tensor/precision.h"
#include "tensor/random.h"
#include "tensor/reduce.h"
#include "tensor/threads.h"
#include "tensor/view.h"
#include "trace/trace.h"

using namespace ringgrad;
namespace data = ringgrad::nn::data;
namespace parallel = ringgrad::nn::parallel;

namespace {

struct Options {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 5;
  std::int64_t batch_size = 64;
  std::int64_t accumulation = 1;
  std::int64_t hidden = 256;
  std::string optimizer = "sgd";
  std::string schedule = "cosine";  // or constant
  double lr = 0.02;
  double momentum = 0.9;
  std::uint64_t seed = 0;
  std::string strategy = "ddp";
  double bucket_cap_mb = 25;
  bool overlap = true;
  int log_every = 100;
  int threads = 1;
  std::string log_path;
  std::string out_path;
  std::string trace_path = std::getenv("RINGGRAD_TRACE") ? std::getenv("RINGGRAD_TRACE") : "";
  std::string device = "cpu";
  std::string backend;  // collectives on GPU tensors: ringgrad or nccl (empty: RINGGRAD_BACKEND)
  std::string dtype = "fp32";
};

struct Evaluation {
  double accuracy = 0, loss = 0;
};

// Accuracy and mean loss over the whole test set, in batches of 1000 moved to `device`, without
// a graph. Every rank evaluates it all (sharded strategies need every rank in each forward).
Evaluation evaluate(nn::Module& model, const data::ImageDataset& ds, Device device) {
  NoGradGuard no_grad;
  model.eval();
  Evaluation e;
  const std::int64_t n = ds.size();
  for (std::int64_t start = 0; start < n; start += 1000) {
    const std::int64_t len = std::min<std::int64_t>(1000, n - start);
    const Tensor logits = model(kernels::narrow(ds.images, 0, start, len).to(device));
    const Tensor labels = kernels::narrow(ds.labels, 0, start, len).to(device);
    e.loss += cross_entropy(logits, labels).item<double>() * static_cast<double>(len);
    e.accuracy += kernels::sum(kernels::eq(kernels::argmax(logits, 1), labels)).item<double>();
  }
  model.train();
  return {e.accuracy / static_cast<double>(n), e.loss / static_cast<double>(n)};
}

// The model, its optimizer and the split of the work over the ranks.
void print_header(const parallel::Accelerator& acc, const nn::Module& model, const parallel::DataParallel& dp,
                  const Options& opt, std::int64_t features, Device device) {
  std::int64_t n_params = 0;
  for (const Tensor& p : model.parameters()) n_params += p.numel();
  acc.print("MLP {}-{}-10, {} parameters, {} lr {}, strategy {}, {}, on {} ({} matmuls)\n", features, opt.hidden,
            n_params, opt.optimizer, opt.lr, dp.name(), acc.batch_split(opt.batch_size, opt.accumulation),
            device.str(), opt.dtype);
}

// After `epoch`: the test set's accuracy and loss (every rank evaluates it all), printed and logged.
void report_test(const parallel::Accelerator& acc, std::ofstream& log, nn::Module& model, const data::ImageDataset& test,
                 Device device, int epoch) {
  const Evaluation e = evaluate(model, test, device);
  acc.print("epoch {} test accuracy {:.4f} test loss {:.4f}\n", epoch + 1, e.accuracy, e.loss);
  if (log) log << nlohmann::json{{"epoch", epoch + 1}, {"test_accuracy", e.accuracy}, {"test_loss", e.loss}} << "\n";
}

// Linear(features, hidden), ReLU, Linear(hidden, 10): one logit per Fashion-MNIST class.
std::shared_ptr<nn::Sequential> make_mlp(std::int64_t features, std::int64_t hidden) {
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(features, hidden), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(hidden, 10)});
}

// The model (already on its device, so the optimizer's state is made there too) and SGD with
// momentum or Adam over all its parameters, inside the --strategy.
std::unique_ptr<parallel::DataParallel> configure_optimizer(parallel::Accelerator& acc,
                                                            const std::shared_ptr<nn::Sequential>& model,
                                                            const Options& opt) {
  auto make_optimizer = [&](std::vector<nn::ParamGroup> groups) -> std::unique_ptr<nn::Optimizer> {
    if (opt.optimizer == "sgd") return std::make_unique<nn::SGD>(std::move(groups), opt.lr, opt.momentum);
    return std::make_unique<nn::Adam>(std::move(groups), nn::AdamOptions{opt.lr});
  };
  parallel::DataParallelOptions options;
  options.bucket_cap_mb = opt.bucket_cap_mb;
  options.overlap = opt.overlap;
  return acc.prepare(opt.strategy, model, {{model->parameters()}}, make_optimizer, options);
}

// One step's forward and backward over this rank's rows x, y, in `accumulation` micro-batches
// whose gradients add up; all but the last run under no_sync(), so the ranks communicate once.
// Returns this rank's loss on its rows.
double forward_backward(parallel::DataParallel& dp, const Tensor& x, const Tensor& y, std::int64_t accumulation) {
  const std::int64_t rows = x.size(0);
  double loss_value = 0;
  for (std::int64_t m = 0; m < accumulation; ++m) {
    const std::int64_t begin = rows * m / accumulation, end = rows * (m + 1) / accumulation;
    const Tensor loss = cross_entropy(dp.forward(kernels::narrow(x, 0, begin, end - begin)),
                                      kernels::narrow(y, 0, begin, end - begin)) *
                        (1.0 / static_cast<double>(accumulation));
    loss_value += loss.item<double>();
    if (m + 1 < accumulation) {
      auto no_sync = dp.no_sync();
      dp.backward(loss);
    } else {
      dp.backward(loss);
    }
  }
  return loss_value;
}

// The steps since the last progress line: their samples over all ranks, their wall-clock time,
// and the strategy's communication wait (its counters restart with each window).
class ProgressWindow {
 public:
  explicit ProgressWindow(parallel::DataParallel& dp) : dp_(dp) { dp_.reset_stats(); }
  void add(std::int64_t samples) { samples_ += samples; }

  // Collective: prints and logs the progress line of `step` (batch b of n_batches in `epoch`,
  // the loss averaged over the ranks), then starts a new window.
  void report(parallel::Accelerator& acc, std::ofstream& log, Device device, int epoch, std::int64_t step,
              std::size_t b, std::size_t n_batches, double loss_value) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double samples_per_s = static_cast<double>(samples_) / seconds;
    const double comm_share = dp_.stats().wait_seconds / seconds;
    const double global_loss = acc.mean(loss_value);
    const double peak_mib = parallel::peak_memory_mib(device);
    acc.print("epoch {} step {:>5} ({:>4}/{}) loss {:.4f} {:>8.0f} samples/s comm wait {:>4.1f}% peak {:.0f} MiB\n",
              epoch + 1, step, b + 1, n_batches, global_loss, samples_per_s, 100 * comm_share, peak_mib);
    if (log) {
      log << nlohmann::json{{"step", step}, {"epoch", epoch + 1}, {"train_loss", global_loss},
                            {"samples_per_s", samples_per_s}, {"comm_wait_share", comm_share},
                            {device.is_cpu() ? "peak_rss_mib" : "peak_gpu_mib", peak_mib}}
          << "\n";
    }
    dp_.reset_stats();
    start_ = std::chrono::steady_clock::now();
    samples_ = 0;
  }

 private:
  parallel::DataParallel& dp_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::int64_t samples_ = 0;
};

int train(const Options& opt) {
  set_num_threads(opt.threads);
  parallel::Accelerator acc(opt.backend);
  const Device device = parallel::select_device(opt.device);
  set_matmul_precision(parse_matmul_precision(opt.dtype));
  const std::int64_t local_batch = acc.local_batch(opt.batch_size, opt.accumulation);
  const data::ImageDataset train_set = data::load_fashion_mnist(opt.data_dir, true);
  const data::ImageDataset test_set = data::load_fashion_mnist(opt.data_dir, false);
  manual_seed(opt.seed);
  const auto model = make_mlp(train_set.images.size(1), opt.hidden);
  model->to(device);  // before the optimizer is made, so its state is made there too
  const auto dp = configure_optimizer(acc, model, opt);
  std::ofstream log;
  if (!opt.log_path.empty() && acc.is_main_process()) log.open(opt.log_path);
  print_header(acc, *model, *dp, opt, train_set.images.size(1), device);

  std::int64_t step = 0;
  // --schedule cosine: from lr down to 0 over the whole run, no warmup (decay set below, once
  // the number of steps per epoch is known).
  nn::CosineSchedule lr_schedule{opt.lr, 0.0, 0, 1};
  parallel::TraceWindow timeline(opt.trace_path, acc.comm(), model.get());  // --trace: steps 2-4
  for (int epoch = 0; epoch < opt.epochs; ++epoch) {
    data::DistributedSampler sampler = acc.sampler(train_set.size(), true, opt.seed);
    sampler.set_epoch(epoch);
    const auto batches = data::make_batches(sampler.indices(), local_batch * opt.accumulation);
    lr_schedule.decay_iters = static_cast<std::int64_t>(batches.size()) * opt.epochs;
    ProgressWindow progress(*dp);
    for (std::size_t b = 0; b < batches.size(); ++b) {
      timeline.at(step);
      const trace::Span span("step", "step");
      const Tensor x = data::take_rows(train_set.images, batches[b]).to(device);
      const Tensor y = data::take_rows(train_set.labels, batches[b]).to(device);
      dp->zero_grad();
      const double loss_value = forward_backward(*dp, x, y, opt.accumulation);
      if (opt.schedule == "cosine") dp->set_lr(lr_schedule.at(step));
      dp->step();

      ++step;
      progress.add(x.size(0) * acc.world_size());
      if (step % opt.log_every == 0 || b + 1 == batches.size())
        progress.report(acc, log, device, epoch, step, b, batches.size(), loss_value);
    }
    timeline.finish(step);
    report_test(acc, log, *model, test_set, device, epoch);
  }
  if (!opt.out_path.empty()) {
    acc.save(*dp, opt.out_path, {{"model", "mlp"}});
    acc.print("saved {}\n", opt.out_path);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Train a multilayer perceptron on Fashion-MNIST, on one process or several (under ringgrad-run)"};
  app.option_defaults()->always_capture_default();
  app.add_option("--data", opt.data_dir, "Folder with the Fashion-MNIST .gz files");
  app.add_option("--epochs", opt.epochs, "Passes over the training set")->check(ringgrad::cli::at_least(1));
  app.add_option("--batch-size", opt.batch_size, "Global batch: samples per step over all ranks")->check(ringgrad::cli::at_least(1));
  app.add_option("--accumulation", opt.accumulation, "Micro-batches per step (gradient accumulation)")->check(ringgrad::cli::at_least(1));
  app.add_option("--hidden", opt.hidden, "Width of the hidden layer")->check(ringgrad::cli::at_least(1));
  app.add_option("--optimizer", opt.optimizer, "sgd (with momentum) or adam")->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--lr", opt.lr, "Learning rate (the peak, with --schedule cosine)")->check(ringgrad::cli::kNonNegative);
  app.add_option("--schedule", opt.schedule, "Learning rate over the run: cosine (from --lr down to 0) or constant")
      ->check(CLI::IsMember({"cosine", "constant"}));
  app.add_option("--momentum", opt.momentum, "SGD momentum")->check(ringgrad::cli::kBelowOne);
  app.add_option("--seed", opt.seed, "Seed of the initial weights and the shuffling");
  app.add_option("--strategy", opt.strategy, "Data parallelism: ddp-naive, ddp, zero1, zero2, fsdp")
      ->check(CLI::IsMember({"ddp-naive", "ddp", "zero1", "zero2", "fsdp"}));
  app.add_option("--bucket-cap-mb", opt.bucket_cap_mb, "DDP bucket size in MiB")->check(ringgrad::cli::kPositive);
  app.add_option("--overlap", opt.overlap, "DDP: all-reduce buckets during backward (true) or after it (false)");
  app.add_option("--log-every", opt.log_every, "Steps between progress lines")->check(ringgrad::cli::at_least(1));
  app.add_option("--threads", opt.threads, "BLAS threads per process")->check(ringgrad::cli::at_least(1));
  app.add_option("--log", opt.log_path, "Write JSON lines here (rank 0)");
  app.add_option("--trace", opt.trace_path,
                 "Chrome trace-event JSON (and FILE.svg) of steps 2-4 on every rank (default: RINGGRAD_TRACE)");
  app.add_option("--out", opt.out_path, "Save a full checkpoint (.safetensors) here");
  app.add_option("--device", opt.device, "cpu, cuda (under a launcher: cuda:LOCAL_RANK % GPUs) or cuda:N");
  app.add_option("--dtype", opt.dtype, "Matmul precision: fp32, or bf16 (bf16 operands, fp32 accumulation)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--backend", opt.backend,
                 "Collectives on GPU tensors: ringgrad (CUDA IPC / staging) or nccl (default: RINGGRAD_BACKEND, else ringgrad)")
      ->check(CLI::IsMember({"ringgrad", "nccl"}));
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  for (const auto& [name, path] : {std::pair{"--out", opt.out_path}, {"--log", opt.log_path}, {"--trace", opt.trace_path}}) {
    if (const std::string why = path.empty() ? "" : ringgrad::cli::why_unwritable(path); !why.empty()) {
      fmt::print(stderr, "train_mlp: {} {}: {}\n", name, path, why);
      return 2;
    }
  }
  try {
    return train(opt);
  } catch (const data::DataError& e) {
    fmt::print(stderr, "train_mlp: {}\n", e.what());
    return 2;
  } catch (const collectives::CollectiveError& e) {  // ranks that disagree (RINGGRAD_CHECK) would again after a restart
    fmt::print(stderr, "train_mlp: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "train_mlp: {}\n", e.what());
    return 2;
  } catch (const std::runtime_error& e) {  // no GPU where one was asked for
    fmt::print(stderr, "train_mlp: {}\n", e.what());
    return 1;
  }
}
