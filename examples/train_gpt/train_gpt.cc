// train_gpt: a character-level GPT on a text file, on one process or many. The loop in train()
// is the whole recipe: evaluate every eval_interval iterations, then one step of forward, loss,
// backward (gradients reduced across ranks by the chosen strategy), clipping and AdamW under a
// warmup + cosine learning rate.
//
//   train_gpt --data data/tinyshakespeare.txt --config baby --log run.jsonl --out ckpt.safetensors
//   train_gpt ... --resume ckpt.safetensors --max_iters 3000     # continue exactly where it stopped
//   ringgrad-run --nproc-per-node 2 train_gpt --config baby --strategy ddp
//   train_gpt --config baby --time_budget 60    # as good as it gets in 60 s of training
//   train_gpt --config shakespeare-char --device cuda --dtype bf16   # nanoGPT's GPU recipe
//   ringgrad-run --nproc-per-node 4 train_gpt --config baby --tp 2 --pp 2 --micro_batches 2   # model_parallel.cc
//   ringgrad-run --nproc-per-node 2 train_gpt --config baby --cp 2   # the sequence split, ring attention
//
// The pieces around the loop sit beside this file: options (the flags), optimizer, checkpointing
// (resume and save), evaluation (loss estimates and the sample), report (progress, throughput,
// memory), and model_parallel (the --tp/--pp/--cp path).
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "autograd/ops.h"
#include "collectives/collective_error.h"
#include "examples/train_gpt/checkpointing.h"
#include "examples/train_gpt/evaluation.h"
#include "examples/train_gpt/model_parallel.h"
#include "examples/train_gpt/optimizer.h"
#include "examples/train_gpt/options.h"
#include "examples/train_gpt/report.h"
#include "examples/train_gpt/run.h"
#include "nn/data/char_dataset.h"
#include "nn/data/idx.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/timeline.h"
#include "tensor/precision.h"
#include "tensor/threads.h"
#include "tensor/view.h"
#include "trace/trace.h"

using namespace ringgrad;
using namespace ringgrad::examples;
using nn::data::Split;
namespace parallel = ringgrad::nn::parallel;

namespace {

// The learning rate of iteration `it` (warmup, then cosine or wsd decay). With a time budget the
// schedule runs on the elapsed fraction of it instead, mapped onto lr_decay_iters.
double learning_rate(const nn::TrainConfig& cfg, std::int64_t it, double elapsed, double time_budget) {
  if (time_budget == 0) return cfg.lr_at(it);
  return cfg.lr_at(static_cast<std::int64_t>(elapsed / time_budget * static_cast<double>(cfg.lr_decay_iters)));
}

// One step's forward and backward: this rank's rows of the global batch, in `accumulation`
// micro-batches whose gradients add up; all but the last run under no_sync(), so the gradients
// are reduced across ranks once per step. Returns this rank's loss on its rows.
double forward_backward(Run& run, const nn::data::Batch& batch, std::int64_t local_batch) {
  const std::int64_t accumulation = run.opt.dist.accumulation;
  const std::int64_t micro = run.cfg.batch_size / accumulation;  // rows of one micro-step, all ranks
  double loss_sum = 0;
  for (std::int64_t m = 0; m < accumulation; ++m) {
    const std::int64_t first_row = m * micro + run.acc.rank() * local_batch;
    const Tensor x = kernels::contiguous(kernels::narrow(batch.x, 0, first_row, local_batch)).to(run.device);
    const Tensor y = kernels::contiguous(kernels::narrow(batch.y, 0, first_row, local_batch)).to(run.device);
    const Tensor loss = cross_entropy(run.dp.forward(x), y) * (1.0 / static_cast<double>(accumulation));
    loss_sum += loss.item<double>();
    if (m + 1 < accumulation) {
      auto no_sync = run.dp.no_sync();
      run.dp.backward(loss);
    } else {
      run.dp.backward(loss);
    }
  }
  return loss_sum;
}

int train(nn::TrainConfig cfg, const Options& opt) {
  parallel::Accelerator acc(opt.placement.backend);
  const Device device = parallel::select_device(opt.placement.device);
  set_matmul_precision(parse_matmul_precision(opt.placement.dtype));
  const auto ds = nn::data::CharDataset::from_file(opt.paths.data);
  cfg.model.vocab_size = ds.vocab_size();
  const std::int64_t local_batch = acc.local_batch(cfg.batch_size, opt.dist.accumulation);
  manual_seed(cfg.seed);  // the same initial weights on every device: drawn on the CPU, then moved
  auto model = std::make_shared<nn::GPT>(cfg.model);
  model->to(device);  // before the optimizer is made, so its state is made there too
  const auto dp = configure_optimizers(acc, model, cfg, opt.dist);
  const std::string resume = resume_path(opt.paths);
  nn::TrainState state = start_or_resume(acc, *dp, cfg, ds, opt, resume);
  Run run{acc, cfg, opt, ds, *model, *dp, device, state.iter, std::move(state),
          RunLog(opt.paths.log, acc.is_main_process(), !resume.empty())};
  print_run_header(run);

  const double time_budget = opt.dist.time_budget;  // seconds of training steps; 0: max_iters decides
  StepTimes times;
  parallel::TraceWindow timeline(opt.paths.trace, acc.comm(), model.get(), {}, 2, opt.paths.trace_iters);  // --trace
  std::int64_t it = run.state.iter;
  for (;; ++it) {
    // Under a time budget training stops when it is spent; rank 0's clock decides for all.
    const double elapsed = time_budget > 0 ? acc.broadcast_from_main(times.seconds) : 0;
    if (time_budget > 0 ? elapsed >= time_budget : it >= cfg.max_iters) break;
    if (time_budget == 0 && it % cfg.eval_interval == 0) evaluate(run, it);

    timeline.at(it);
    const trace::Span iteration("iteration", "step");
    times.begin(*dp);
    const double lr = learning_rate(cfg, it, elapsed, time_budget);
    const nn::data::Batch batch = ds.get_batch(Split::Train, cfg.batch_size, cfg.model.block_size, run.state.data_gen);
    dp->zero_grad();
    const double loss_sum = forward_backward(run, batch, local_batch);
    dp->set_lr(lr);
    const double grad_norm = optimizer_step(*dp, cfg.grad_clip);
    const double ms = times.end(*dp);

    if (opt.paths.save_every > 0 && (it + 1) % opt.paths.save_every == 0) save_checkpoint(run, it + 1);
    if (it % cfg.log_interval == 0) log_progress(run, it, loss_sum, lr, grad_norm, ms, times);
  }
  timeline.finish(it);
  report_throughput(run, times);
  report_memory(run);  // before evaluation, with this step's gradients held
  evaluate(run, it);
  if (!opt.paths.out.empty()) acc.print("saved {}\n", opt.paths.out);
  if (cfg.eval_full || time_budget > 0) report_full_val_loss(run, it);  // every validation token once
  return sample(run);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen, even in a log file
  nn::TrainConfig cfg;
  Options opt;
  if (const auto status = parse_options(argc, argv, cfg, opt)) return *status;
  if (opt.mp.tp * opt.mp.pp * opt.mp.cp > 1) {
    try {
      opt.mp.resume = resume_path(opt.paths);
      set_num_threads(opt.threads);
      return examples::train_model_parallel(cfg, opt.paths.data, opt.mp);
    } catch (const std::exception& e) {
      fmt::print(stderr, "train_gpt: {}\n", e.what());
      return 2;
    }
  }
  try {
    set_num_threads(opt.threads);  // throws std::invalid_argument on a bad RINGGRAD_ONEDNN
    return train(cfg, opt);
  } catch (const nn::data::DataError& e) {
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const collectives::CollectiveError& e) {  // ranks that disagree (RINGGRAD_CHECK) would again after a restart
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // a batch that does not divide, a bad flag combination
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // an unreadable checkpoint, a GPU that is not there
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 1;
  }
}
